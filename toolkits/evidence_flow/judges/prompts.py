"""Prompts of the ``llm`` presence judge (written for this project).

Glossary of the tags the user prompt uses:

* ``<fact>`` — the evidence statement(s) that carried the critical information, as the
  conversation said them, with who said them when known;
* ``<answer>`` — the golden answer the fact supports (empty for a yes/no question);
* ``<text id="N">`` — one text the graph side reached (a memory unit, a buffer, a context), cut to
  a bounded length.

The model answers one atomic question per text, as JSON: ``{"verdicts": [{"id": N, "verdict":
"yes" | "no" | "contradicts"}, ...]}``.
"""

from __future__ import annotations

__all__ = ["PRESENCE_SYSTEM", "PRESENCE_USER", "VERDICT_SCHEMA", "VERDICTS"]

VERDICTS = ("yes", "no", "contradicts")

PRESENCE_SYSTEM = (
    "You check whether pieces of a memory system's data still state one fact from a conversation. "
    "For each text answer exactly one word: \"yes\" when the text states the fact (other words, tense or "
    "word order are fine; names may be replaced by the right pronoun or role), \"no\" when it does not "
    "say it (the fact is missing or only partly there), \"contradicts\" when it states something "
    "incompatible with it (another person, date, number, place or value, the opposite, a negation). "
    "Judge only the fact, not the rest of the text. Reply with JSON only."
)

PRESENCE_USER = (
    "<fact>{fact}</fact>\n<answer>{answer}</answer>\n\n{texts}\n\n"
    "Does each text still state the fact? Reply as "
    '{{"verdicts": [{{"id": <text id>, "verdict": "yes" | "no" | "contradicts"}}]}} with one entry per text.'
)

VERDICT_SCHEMA = {
    "type": "json_schema",
    "json_schema": {
        "name": "presence_verdicts",
        "strict": True,
        "schema": {
            "type": "object",
            "properties": {
                "verdicts": {
                    "type": "array",
                    "items": {
                        "type": "object",
                        "properties": {"id": {"type": "integer"}, "verdict": {"type": "string", "enum": list(VERDICTS)}},
                        "required": ["id", "verdict"],
                        "additionalProperties": False,
                    },
                }
            },
            "required": ["verdicts"],
            "additionalProperties": False,
        },
    },
}
