"""Build the independent benchmark: one graph per case, in the MemTraceBench layout.

``python -m tests.evidence_flow.independent.build OUT_DIR`` writes ``OUT_DIR/<split>/gNNN.json``
(one smartcomment export per case, with ``data.annotations``) for the four splits, and
``python -m tests.evidence_flow.independent.build --score RUN.json [RUN.json ...]`` prints
ETA/OIA per kind, system and fault from ``run_error_attribution.py`` outputs.

Each annotation carries the gold ``final_error_type``/``final_op_id`` (the op the fault hit, by
construction) and a ``fault`` record (kind, fault, system) for the score tables; attributors must
read neither.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections import defaultdict
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .cases import CASES, FACTS, Case, Fact
from .conversation import Turn, load_slice, render_turn, turn_facts
from .systems import Question, run_system

__all__ = ["build_case", "build_benchmark", "main", "score"]

DEFAULT_LOCOMO = Path(__file__).resolve().parents[4] / "shared" / "data" / "locomo" / "locomo10.json"


def _mid(fact: Fact, dia: str) -> str:
    return f"U{fact.sample + 1}:{dia}"


def _variant_turn(turn: Turn, variant: tuple[str, str]) -> Turn:
    return Turn(turn.mid, turn.dia_id, variant[0], variant[1], turn.session, turn.session_id, turn.timestamp)


def _window_for_trim(turns: list[Turn], ev: str) -> int:
    """A Long-Context budget that trims the evidence away only near the end of the conversation."""
    after = [t for t in turns[[t.mid for t in turns].index(ev) + 1:]]
    return sum(len(render_turn(t).split()) for t in after) + 2


_SYSTEM_OPTIONS = ("separate_trim", "non_strict", "agentic", "budget_words", "overlap", "max_messages", "top_k",
                   "repr_memory", "anonymous_facts")


@dataclass(kw_only=True)
class _Fault:
    """One case's fault being planned: what the step handlers read and the two plans they fill."""

    case: Case
    fact: Fact
    turns: list[Turn]
    ev: str
    variant: tuple[str, str] | None
    plan: dict[str, Any]
    qplan: dict[str, Any] = field(default_factory=dict)

    @property
    def opts(self) -> dict[str, Any]:
        return self.case.options

    def turn(self, mid: str) -> Turn:
        return {t.mid: t for t in self.turns}[mid]

    def variant_line(self) -> str:
        return render_turn(_variant_turn(self.turn(self.ev), self.variant))

    def push(self) -> None:
        if "push" in self.opts:
            self.qplan["push"] = [_mid(self.fact, self.opts["push"])]


def _store(f: _Fault) -> str:
    f.plan["store_text"] = {f.ev: f.variant}
    return f"msg:{f.ev}"


def _trim(f: _Fault) -> str:
    f.plan["window_words"] = _window_for_trim(f.turns, f.ev)
    return f"trim:{f.ev}"


def _rewrite(f: _Fault) -> str:
    f.plan["rewrite"] = {f.turns[-1].mid: {f.ev: f.variant_line()}}
    return f"rewrite:{f.ev}"


def _stale(f: _Fault) -> str:
    f.qplan["stale_before"] = f.ev
    return "retrieve:{q}"


def _hide(f: _Fault) -> str:
    f.qplan["hide"] = [f.ev]
    f.push()
    return "round1:{q}" if f.case.system == "evermemos" and f.opts.get("agentic", True) else "retrieve:{q}"


def _final_hide(f: _Fault) -> str:
    f.qplan["final_hide"] = [f.ev]
    f.push()
    return "final:{q}"


def _cut(f: _Fault) -> str:
    f.plan["cut_omits"] = [f.ev]
    return f"cut:{f.ev}"


def _add(f: _Fault) -> str:
    f.plan["unit_edit"] = {f.ev: f.variant_line()}
    return f"add:{f.ev}"


def _consolidate(f: _Fault) -> str:
    f.plan["consolidate"] = {"after": f.turns[-1].mid, "unit_of": f.ev, "with": _mid(f.fact, f.opts["other"]),
                             "old_line": render_turn(f.turn(f.ev)), "line": f.variant_line()}
    return "consolidate"


def _dedup(f: _Fault) -> str:
    f.plan["dedup"] = {"after": f.turns[-1].mid, "unit_of": f.ev, "keep": _mid(f.fact, f.opts["keep"])}
    return "dedup"


def _facts(f: _Fault) -> str:
    explicit = f.fact.mem0_facts.get(f"{f.fact.evidence}/{f.case.variant}")
    # the faulty reading names whom it attaches the fact to, whatever style the extractor has
    f.plan["facts"][f.ev] = explicit if explicit is not None else turn_facts(_variant_turn(f.turn(f.ev), f.variant))
    f.plan.pop("paraphrase", None)
    return f"msg:{f.ev}"


def _none(f: _Fault) -> str:
    f.plan["decisions"] = {f.ev: {"actions": [{"event": "NONE", "unit_of": _mid(f.fact, f.opts["similar"])}],
                                  "add_facts": False}}
    return f"decide:{f.ev}"


def _update_or_delete(f: _Fault) -> str:
    step = f.case.step
    action: dict[str, Any] = {"event": step.upper(), "unit_of": f.ev, "contains": f.fact.golden[0]}
    if step == "update":
        action["text"] = f.opts["text"]
    f.plan.setdefault("decisions", {})[_mid(f.fact, f.opts["at"])] = {"actions": [action], "add_facts": True}
    return f"{step}:{f.ev}"


def _episode(f: _Fault) -> str:
    f.plan["episode_edit"] = {f.ev: f.variant}
    f.plan.pop("paraphrase", None)
    return f"extract:{f.ev}"


def _buffer_lose(f: _Fault) -> str:
    f.plan["buffer_loses"] = [f.ev]
    return f"msg:{f.ev}"


def _memcell(f: _Fault) -> str:
    f.plan["memcell_loses"] = [f.ev]
    return f"cell:{f.ev}"


_STEPS: dict[str, Callable[[_Fault], str]] = {
    "store": _store, "trim": _trim, "rewrite": _rewrite, "stale": _stale, "answer": lambda f: "qa:{q}",
    "hide": _hide, "final_hide": _final_hide, "cut": _cut, "add": _add, "consolidate": _consolidate,
    "dedup": _dedup, "facts": _facts, "none": _none, "update": _update_or_delete, "delete": _update_or_delete,
    "episode": _episode, "buffer_lose": _buffer_lose, "memcell": _memcell,
}


def plan_for(case: Case, fact: Fact, turns: list[Turn]) -> tuple[dict[str, Any], dict[str, Any], str]:
    """``(construction plan, retrieval plan of the failed question, role of the labelled op)``."""
    ev = _mid(fact, fact.evidence)
    opts = case.options
    plan: dict[str, Any] = {k: v for k, v in opts.items() if k in _SYSTEM_OPTIONS}
    if case.system == "mem0":
        plan["facts"] = {_mid(fact, k): v for k, v in fact.mem0_facts.items() if "/" not in k}
    if opts.get("paraphrase"):
        plan["paraphrase"] = {ev: fact.paraphrase}
    if "refresh" in opts:  # a sound UPDATE of the holding unit before the fault
        at, text = opts["refresh"]
        plan["decisions"] = {_mid(fact, at): {"actions": [{"event": "UPDATE", "unit_of": ev, "contains": fact.golden[0],
                                                          "text": text}], "add_facts": True}}
    handler = _STEPS.get(case.step)
    if handler is None:
        raise ValueError(f"unknown step {case.step!r}")
    fault = _Fault(case=case, fact=fact, turns=turns, ev=ev, plan=plan,
                   variant=fact.variants.get(case.variant) if case.variant else None)
    role = handler(fault)
    return fault.plan, fault.qplan, role


def _control(fact: Fact, turns: list[Turn]) -> Fact | None:
    """Another question about the same conversation, answered correctly (the graph then holds two)."""
    present = {t.mid for t in turns}
    for other in FACTS.values():
        if other.key != fact.key and other.sample == fact.sample and _mid(other, other.evidence) in present:
            return other
    return None


def build_case(index: int, case: Case, locomo: Path) -> tuple[str, dict[str, Any]]:
    """Build one case; returns ``(split, exported graph with its annotation)``."""
    fact = FACTS[case.fact]
    turns, speakers = load_slice(locomo, fact.sample, fact.sessions, fact.added)
    plan, qplan, role = plan_for(case, fact, turns)
    qid = f"locomo-qa-{fact.sample + 1}-{100 + index}"
    target = Question(qid=qid, question=fact.question, golden=fact.golden, evidence=[_mid(fact, fact.evidence)],
                      prediction=case.prediction or fact.wrong, correct=False, question_type=fact.question_type,
                      plan=qplan)
    questions = [target]
    other = _control(fact, turns)
    if other is not None:
        control = Question(qid=f"locomo-qa-{fact.sample + 1}-{200 + index}", question=other.question,
                           golden=other.golden, evidence=[_mid(other, other.evidence)],
                           prediction=", ".join(other.golden), correct=True, question_type=other.question_type)
        questions = [control, target] if index % 2 else [target, control]
    filename = f"g{index:03d}.json"
    graph, roles, nodes = run_system(case.system, turns, speakers, questions, plan, sample=fact.sample,
                                     seed=1000 + index, filename=filename)
    key = role.format(q=qid)
    if case.step == "rewrite" and roles.get(key) == roles.get(f"msg:{_mid(fact, fact.evidence)}"):
        raise RuntimeError("the rewrite must come after the evidence was stored")
    if key not in roles:
        raise RuntimeError(f"case {index} ({case.system} {case.fault} on {case.fact}): the fault never acted "
                           f"(no step {key!r}; steps: {sorted(roles)})")
    exported = graph.export_graph()
    ev_node = graph.get_latest_variable(_mid(fact, fact.evidence))
    exported["data"]["annotations"] = [{
        "query_id": nodes[qid]["query_id"],
        "query": fact.question,
        "golden_answers": fact.golden,
        "golden_answers_id": nodes[qid]["golden_answers_id"],
        "prediction": target.prediction,
        "prediction_id": nodes[qid]["prediction_id"],
        "source_evidence_ids": [ev_node.full_node_id],
        "final_error_type": case.error_type,
        "final_op_id": roles[key],
        "fault": {"kind": case.kind, "fault": case.fault, "system": case.system, "fact": case.fact},
    }]
    return case.system, exported


def build_benchmark(out: Path, locomo: Path = DEFAULT_LOCOMO, cases: Sequence[Case] = CASES) -> dict[str, int]:
    """Write every case under ``out/<split>/``; returns the number of cases per split."""
    counts: dict[str, int] = defaultdict(int)
    for index, case in enumerate(cases):
        try:
            split, exported = build_case(index, case, locomo)
        except Exception as exc:
            raise RuntimeError(f"case {index} ({case.system} {case.fault} on {case.fact}): {exc}") from exc
        path = out / split / f"g{index:03d}.json"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps(exported, ensure_ascii=False), encoding="utf-8")
        counts[split] += 1
    return dict(counts)


def score(records: list[dict[str, Any]]) -> dict[str, dict[str, list[int]]]:
    """Per group (``kind``, ``kind/system``, ``kind/fault``, ``kind/type``): [cases, type right, op right]."""
    table: dict[str, dict[str, list[int]]] = defaultdict(lambda: defaultdict(lambda: [0, 0, 0]))
    for record in records:
        fault = record.get("fault") or {}
        groups = {"kind": fault.get("kind"), "system": f"{fault.get('kind')}/{fault.get('system')}",
                  "fault": f"{fault.get('kind')}/{fault.get('fault')}",
                  "type": f"{fault.get('kind')}/{record.get('final_error_type')}"}
        for level, name in groups.items():
            row = table[level][name]
            row[0] += 1
            row[1] += bool(record.get("is_error_type_correct"))
            row[2] += bool(record.get("is_op_id_correct"))
    return table


def _print_score(paths: list[Path]) -> None:
    records = []
    for path in paths:
        records.extend(json.loads(path.read_text(encoding="utf-8"))["results"])
    table = score(records)
    for level in ("kind", "system", "type", "fault"):
        print(f"== by {level}")
        for name, (n, eta, oia) in sorted(table[level].items()):
            print(f"  {name:45s} {n:3d}  ETA {eta / n:.3f}  OIA {oia / n:.3f}")


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("out", nargs="?", type=Path, help="folder to write the benchmark to")
    parser.add_argument("--locomo", type=Path, default=DEFAULT_LOCOMO, help="path of locomo10.json")
    parser.add_argument("--score", type=Path, nargs="+", help="score run_error_attribution.py outputs instead")
    args = parser.parse_args(argv)
    if args.score:
        _print_score(args.score)
        return 0
    if args.out is None:
        parser.error("give an output folder (or --score)")
    if not args.locomo.is_file():
        print(f"error: LoCoMo data not found at {args.locomo}", file=sys.stderr)
        return 2
    counts = build_benchmark(args.out, args.locomo)
    print(f"{sum(counts.values())} cases: " + ", ".join(f"{k} {v}" for k, v in sorted(counts.items())))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
