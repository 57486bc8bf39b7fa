"""No-LLM attribution: follow the critical information through the graph (``evidence_flow``).

Public surface:

* :func:`attribute_case_evidence_flow` — attribute one failed case (see :mod:`._attributor`
  for the algorithm and :mod:`._text` for how presence is measured).
* :func:`evidence_flow_seed` — turn a result into a starting frontier and a hint for the LLM
  strategies.
"""

from ._attributor import STATUSES, attribute_case_evidence_flow, clear_graph_cache
from ._seed import evidence_flow_seed
from ._text import (
    DEFAULT_ANSWER_THRESHOLD,
    DEFAULT_EMBEDDING_THRESHOLD,
    DEFAULT_EVIDENCE_THRESHOLD,
    content_tokens,
    token_recall,
)

__all__ = [
    "DEFAULT_ANSWER_THRESHOLD",
    "DEFAULT_EMBEDDING_THRESHOLD",
    "DEFAULT_EVIDENCE_THRESHOLD",
    "STATUSES",
    "attribute_case_evidence_flow",
    "clear_graph_cache",
    "content_tokens",
    "evidence_flow_seed",
    "token_recall",
]
