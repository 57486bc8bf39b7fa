"""Questions answered by two messages ("How many more people came to Priya's concert than to
Jonah's?"): the second piece of evidence.

When no message states the golden answer (a computed or inferred answer), the flow follows the
message closest to the question. A comparison or a multi-hop question needs a second message,
and a fault may have hit that one. The second hop is the given (retrieved or annotated) message
that names someone (or something) the question names and the first message does not, and holds
the most of what the first one leaves out of the question — rarity-weighted, its speaker counted,
the one it is said to not — provided that is a real share (:data:`_MIN_GAIN` of the question's
weight). Both are followed and the earlier loss decides.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

from ._evidence import only_asks, rarity_weights
from ._facts import without_address
from ._graph_view import GraphView, NodeRec, message_speaker
from ._text import content_tokens, message_text, stem

__all__ = ["second_hop"]

#: Share of the question's weight the second message must add to what the first one holds (it must
#: also name someone the question names, so a small share is enough: "Ines" in a sum of two harvests).
_MIN_GAIN = 0.1


def _said(view: GraphView, node: NodeRec) -> frozenset[str]:
    speaker = message_speaker(node)
    tokens = content_tokens(without_address(message_text(node.value), view.speakers))
    return tokens | {stem(speaker)} if speaker else tokens


def second_hop(view: GraphView, first: Sequence[NodeRec], candidates: Sequence[NodeRec],
               question: frozenset[str]) -> NodeRec | None:
    """The candidate that adds the most of the question to what ``first`` holds, or None when none
    adds :data:`_MIN_GAIN` of it."""
    if not question or not first:
        return None
    weight = rarity_weights(view, question)
    total = math.fsum(weight.values())
    if total <= 0:
        return None
    covered = frozenset().union(*(_said(view, m) for m in first))
    missing = question - covered
    # the second message is about another one the question names ("... than Ines?", "Priya's
    # orchestra ... Jonah's quartet"): a question word alone ("hire" for "Greenfield rejected me")
    # is only the first message's fact told in other words
    named = missing & frozenset(map(stem, view.speakers | view.proper_names))
    if not named:
        return None
    taken = {m.full_node_id for m in first}
    best: tuple[float, int, NodeRec] | None = None
    for rank, node in enumerate(candidates):
        if node.full_node_id in taken or only_asks(view, node):
            continue  # a message that only asks states nothing (its reply is what the first hop followed)
        said = _said(view, node)
        if not named & said:
            continue
        gain = math.fsum(weight[t] for t in sorted(missing & said)) / total
        if gain >= _MIN_GAIN and (best is None or gain > best[0]):
            best = (gain, -rank, node)
    return best[2] if best else None
