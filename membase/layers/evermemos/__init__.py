"""EverMemOS, re-implemented: buffered messages, LLM boundary detection into memcells, episode and
event-log extraction, hybrid BM25 + embedding retrieval with RRF and the agentic two-round path.

Modules: `config` (pydantic configs), `prompts` (our prompts), `boundary`, `extraction`, `index`,
`retrieval`, `manager` (pure pipeline returning records), `trace` (records -> graph), `layer`
(the `MemBaseLayer`), `fake` (deterministic model for tests and offline runs).
"""

from membase.layers.evermemos.config import EverMemOSConfig
from membase.layers.evermemos.layer import EverMemOSLayer

__all__ = ["EverMemOSConfig", "EverMemOSLayer"]
