"""How often `evidence_flow`'s presence judge reads a paraphrased memory right.

The dev set (``tests/evidence_flow/data/paraphrase_pairs.json``, every sentence written for this
project) holds synthetic conversations, questions with golden answers and their annotated evidence
message, and memory texts as a memory LLM writes them (third person, a name prefix, no subject,
synonyms, nominal style, number words, a relative date resolved, several facts merged, key: value,
an episode paragraph), each labelled *faithful* (still states the evidence's fact) or *corrupted*
(answer swapped, negated, another person, a number or date changed, the answer dropped, an
opposite). For every pair the judge the attributor would build for that question and evidence
(:func:`toolkits.evidence_flow._case_facts.conversation_judge`) assesses the memory text:

* a faithful memory judged absent or in conflict makes `evidence_flow` blame extraction where
  the fault is later (retrieval, the answer);
* a corrupted memory judged present makes it blame a later op where extraction lost the fact.

It prints the faithful→present and corrupted→not-present rates per transformation kind and in
total, for the ``rules`` judge and, with the ``local`` extra, ``embedding`` (MiniLM).

    python -m benchmarks.evidence_flow_paraphrase                       # rules (and embedding if installed)
    python -m benchmarks.evidence_flow_paraphrase --judge rules --misses
"""

from __future__ import annotations

import argparse
import json
import sys
from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from toolkits.evidence_flow._case_facts import conversation_judge

__all__ = ["DEV_SET", "Outcome", "load_pairs", "main", "measure", "rates"]

DEV_SET = Path(__file__).resolve().parents[1] / "tests" / "evidence_flow" / "data" / "paraphrase_pairs.json"
LABELS = ("faithful", "corrupted")


@dataclass(frozen=True, kw_only=True)
class Outcome:
    """One memory text judged against one question."""

    item: str
    split: str
    question: str
    golden: str
    text: str
    label: str
    kind: str
    present: bool
    why: str

    @property
    def right(self) -> bool:
        """A faithful memory read as present, a corrupted one as not present."""
        return self.present == (self.label == "faithful")


def load_pairs(path: Path = DEV_SET) -> list[dict[str, Any]]:
    """The conversations of the dev set.

    Raises:
        ValueError: naming the item and field of a malformed entry.
    """
    data = json.loads(path.read_text(encoding="utf-8"))
    conversations = data.get("conversations") if isinstance(data, dict) else None
    if not isinstance(conversations, list):
        raise ValueError(f"{path}: no 'conversations' list")
    for conversation in conversations:
        for item in conversation.get("items", []):
            for field in ("id", "evidence", "question", "golden", "memories"):
                if field not in item:
                    raise ValueError(f"{path}: item {item.get('id', '?')!r} lacks {field!r}")
            for memory in item["memories"]:
                if memory.get("label") not in LABELS:
                    raise ValueError(f"{path}: item {item['id']!r}: memory label {memory.get('label')!r} is not "
                                     f"one of {', '.join(LABELS)}")
    return conversations


def measure(conversations: Sequence[dict[str, Any]], *, judge: str = "rules", embedder: Any = None) -> list[Outcome]:
    """Judge every memory text of every item."""
    out = []
    for conversation in conversations:
        for item in conversation["items"]:
            verdicts = conversation_judge(conversation["messages"], evidence=item["evidence"],
                                          question=item["question"], golden=item["golden"], judge=judge,
                                          embedder=embedder)
            for memory in item["memories"]:
                verdict = verdicts.assess(memory["text"])
                out.append(Outcome(item=item["id"], split=conversation.get("split", "dev"), question=item["question"],
                                   golden=item["golden"],
                                   text=memory["text"], label=memory["label"], kind=memory["kind"],
                                   present=verdict.present, why=verdict.why))
    return out


def rates(outcomes: Sequence[Outcome]) -> dict[str, dict[str, tuple[int, int]]]:
    """``{label: {kind or "all": (right, total)}}``."""
    table: dict[str, dict[str, list[int]]] = {label: defaultdict(lambda: [0, 0]) for label in LABELS}
    for outcome in outcomes:
        for key in (outcome.kind, "all"):
            cell = table[outcome.label][key]
            cell[0] += outcome.right
            cell[1] += 1
    return {label: {kind: (right, total) for kind, (right, total) in sorted(cells.items())}
            for label, cells in table.items()}


def _print_table(name: str, outcomes: Sequence[Outcome]) -> None:
    table = rates(outcomes)
    print(f"\n## judge {name}")
    for label, reading in (("faithful", "read as present"), ("corrupted", "read as not present")):
        right, total = table[label]["all"]
        print(f"{label}: {right}/{total} {reading} ({right / total:.3f})" if total else f"{label}: none")
        for kind, (k_right, k_total) in table[label].items():
            if kind != "all":
                print(f"  {kind:<16} {k_right:>3}/{k_total:<3} {k_right / k_total:.2f}")


def _embedder() -> Any:
    try:
        from membase.clients import MiniLMEmbedder

        embedder = MiniLMEmbedder()
        embedder.embed(["probe"])
        return embedder
    except Exception as exc:  # noqa: BLE001 - an optional extra: say why and go on without it
        print(f"embedding judge skipped: {exc}", file=sys.stderr)
        return None


def main(argv: Sequence[str] | None = None) -> int:
    """Print the rates of each judge; ``--misses`` lists every wrong verdict."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--pairs", type=Path, default=DEV_SET, help="the dev set (JSON)")
    parser.add_argument("--judge", nargs="+", choices=("rules", "embedding"), default=["rules", "embedding"],
                        help="judges to measure (embedding needs the local extra; skipped without it)")
    parser.add_argument("--misses", action="store_true", help="list every memory the judge reads wrongly")
    parser.add_argument("--split", choices=("dev", "held-out"), default=None,
                        help="measure one split only (default: each split, then both)")
    args = parser.parse_args(argv)
    try:
        conversations = load_pairs(args.pairs)
    except (OSError, ValueError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    for name in args.judge:
        embedder = _embedder() if name == "embedding" else None
        if name == "embedding" and embedder is None:
            continue
        outcomes = measure(conversations, judge=name, embedder=embedder)
        splits = [args.split] if args.split else [*sorted({o.split for o in outcomes}), "all"]
        for split in splits:
            _print_table(f"{name}, {split}", [o for o in outcomes if split in ("all", o.split)])
        outcomes = [o for o in outcomes if args.split in (None, o.split)]
        if args.misses:
            for o in outcomes:
                if not o.right:
                    print(f"  MISS [{o.label}/{o.kind}] {o.item} golden={o.golden!r}: {o.text!r} -> {o.why}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
