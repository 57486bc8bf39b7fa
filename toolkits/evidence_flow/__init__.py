"""No-LLM attribution: follow the critical information through the graph (``evidence_flow``).

Public surface:

* :func:`attribute_case_evidence_flow` — attribute one failed case (the steps are described in
  :mod:`._attributor`; evidence choice in :mod:`._evidence`, the presence rule in
  :mod:`._probe`, lineage and lifecycle in :mod:`._flow`, query time in :mod:`._query_time`).
* :func:`prepare_graph` — index a graph ahead of its first case (a viewer does it in the background).
* :func:`evidence_flow_seed` — turn a result into a starting frontier and a hint for the LLM
  strategies.
"""

from ._attributor import (
    DEFAULT_MIN_CONFIDENCE,
    STATUSES,
    attribute_case_evidence_flow,
    clear_graph_cache,
    prepare_graph,
)
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
    "DEFAULT_MIN_CONFIDENCE",
    "STATUSES",
    "attribute_case_evidence_flow",
    "clear_graph_cache",
    "content_tokens",
    "evidence_flow_seed",
    "prepare_graph",
    "token_recall",
]
