"""Short Mem0 prompts for faultbench runs.

mem0 embeds the update prompt in every decision request, so its long default would dominate the
size of the committed benchmark graphs. The deterministic fake model does not read them; they
are recorded as prompt nodes, so an LLM attributor reading the graph sees what was asked.
"""

from __future__ import annotations

__all__ = ["MEM0_FACT_EXTRACTION_PROMPT", "MEM0_UPDATE_MEMORY_PROMPT"]

MEM0_FACT_EXTRACTION_PROMPT = (
    "Extract the personal facts stated in the conversation input as short standalone sentences. "
    'Return JSON {"facts": [...]} and nothing else.'
)

MEM0_UPDATE_MEMORY_PROMPT = (
    "You maintain a memory of personal facts. For each new fact decide ADD (new information), "
    "UPDATE (refines an existing memory; keep its id), DELETE (contradicts an existing memory) "
    "or NONE (already known)."
)
