"""Held-out benchmark F builds, loads, is labelled by construction and names nothing of its builder.

A reduced quota (one case of a kind per stage and layer) keeps the module to seconds; the full
quota table is checked statically.
"""

from __future__ import annotations

import ast
import contextlib
import io
import json
import re
from collections import Counter, defaultdict
from pathlib import Path

import pytest

from benchmarks.heldout_attribution_f import build as B
from benchmarks.heldout_attribution_f.conversations import CONVERSATIONS, check_consistency
from benchmarks.heldout_attribution_f.faults import KINDS, QUOTAS
from benchmarks.heldout_attribution_f.runtime_env import Hooks
from benchmarks.heldout_attribution_f.trace_runner import record
from toolkits.bench_utils import ERROR_TYPES, load_memtracebench

PACKAGE = Path(B.__file__).resolve().parent
SMALL = {
    "lc-skip-message": 1, "lc-window-trim": 1, "long_context-qa-wrong-pick": 1,
    "rag-chunk-cut": 1, "rag-retrieval-miss": 1, "rag-qa-wrong-reasoning": 1,
    "mem0-fact-swapped": 1, "mem0-none-for-new-fact": 1, "mem0-wrong-update": 1, "mem0-wrong-delete": 1,
    "mem0-retrieval-miss": 1,
    "emos-boundary-drops-message": 1, "emos-episode-vague": 1, "emos-false-sufficient": 1, "emos-hybrid-miss": 1,
    "evermemos-qa-no-answer": 1,
}


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    out = tmp_path_factory.mktemp("bench_f")
    builder = B.Builder(seed=11, quotas=SMALL)
    cases = builder.build()
    manifest = B.write(cases, out, seed=11)
    return out, cases, manifest


def test_conversation_data_is_consistent():
    assert check_consistency() == []
    assert len(CONVERSATIONS) == 3
    for conv, questions in CONVERSATIONS:
        assert 25 <= len(conv.messages()) <= 36 and 3 <= len(conv.sessions) <= 4
        assert {q.qtype for q in questions} >= {"single-hop", "multi-hop", "temporal", "open-domain"}


def test_full_plan_spreads_over_stages_and_layers():
    kinds = {k.name: k for k in KINDS}
    assert set(QUOTAS) <= set(kinds)
    assert 80 <= sum(QUOTAS.values()) <= 110
    types = defaultdict(set)
    for name, n in QUOTAS.items():
        if n:
            types[kinds[name].layer].add(kinds[name].error)
    assert set(types) == {"long_context", "rag", "mem0", "evermemos"}
    assert all(len(t) >= 3 for t in types.values())
    assert set().union(*types.values()) == set(ERROR_TYPES)


@pytest.mark.slow
def test_every_case_loads_with_the_benchmark_loader(built):
    out, cases, manifest = built
    assert len(cases) == len(manifest) == sum(SMALL.values())
    graphs, loaded = load_memtracebench(out / "bench", ["long_context", "rag", "mem0", "evermemos"], download=False)
    assert len(loaded) == len(manifest)
    assert not (out / "bench" / "manifest.json").exists()  # fault kinds stay outside the bench folder
    by_split = Counter(c.metadata["split"] for c in loaded)
    assert by_split == Counter(m["split"] for m in manifest)


@pytest.mark.slow
def test_labels_name_existing_ops_and_nodes(built):
    out, _, manifest = built
    graphs, loaded = load_memtracebench(out / "bench", download=False)
    entries = {m["file"]: m for m in manifest}
    for graph, case in zip(graphs, loaded, strict=True):
        ann = case.metadata["annotation"]
        entry = entries[f"{case.metadata['split']}/{case.metadata['graph_filename']}"]
        op = graph.get_operation(ann["final_op_id"])
        assert op.op_name == entry["gold_op_name"]
        assert graph.filter_by_operation(op.op_id).edge_count > 0
        assert ann["final_error_type"] in ERROR_TYPES
        for node in [ann["query_id"], ann["prediction_id"], ann["golden_answers_id"], *ann["source_evidence_ids"]]:
            assert node in graph
        assert ast.literal_eval(graph.get_variable(ann["prediction_id"]).raw_value) == ann["prediction"]


@pytest.mark.slow
def test_every_split_has_several_error_types(built):
    _, _, manifest = built
    types = defaultdict(set)
    for m in manifest:
        types[m["split"]].add(m["gold_error_type"])
    assert all(len(t) >= 2 for t in types.values()) and len(types) == 4


@pytest.mark.slow
def test_no_record_mentions_the_builder_or_its_fault_kinds(built):
    out, _, _ = built
    modules = [p.stem for p in PACKAGE.glob("*.py") if p.stem != "__init__"]
    terms = ["heldout_attribution", "benchmarks/", "benchmarks.", *(f"{m}.py" for m in modules),
             *(k.name for k in KINDS)]
    words = re.compile(r"(?<![a-z])(fault|inject)")
    for path in sorted((out / "bench").rglob("*.json")):
        text = path.read_text(encoding="utf-8").lower()
        assert [t for t in terms if t.lower() in text] == [], path.name
        assert words.search(text) is None, path.name
        data = json.loads(text)
        for kind in ("nodes", "edges", "operations", "sessions"):
            for rec in data["data"][kind]:
                assert rec["filename"].startswith("membase/") or rec["filename"] == "<sentinel>"


@pytest.mark.slow
def test_counterfactual_replay_holds(built):
    _, cases, _ = built
    for case in cases:
        qs = next(q for c, q in CONVERSATIONS if c is case.conv)
        faulted = record(case.conv, qs, case.split, Hooks(case.plan.stage, case.plan.key, case.plan.edit),
                         seed=case.seed, mode=case.mode)
        clean = record(case.conv, qs, case.split, Hooks(), seed=case.seed, mode=case.mode)
        assert not faulted.correct[case.question.num] and clean.correct[case.question.num]
        assert faulted.export == case.recording.export  # the written graph is this recording
        assert B.first_divergent_op(clean.export, faulted.export) == case.gold_op_id
        assert B.evidence_holds(case) is None


@pytest.mark.slow
def test_checks_reject_a_wrong_label(built):
    _, cases, _ = built
    for case in cases:
        for other in ERROR_TYPES:
            if other == case.kind.error:
                continue
            relabelled = B.Case(**{**case.__dict__, "kind": type(case.kind)(case.kind.name, case.kind.layer, other,
                                                                            case.kind.plan)})
            if relabelled.piece is None and other != "ResponseError":
                relabelled.piece = case.question.pieces[0]
            assert B.evidence_holds(relabelled) is not None, (case.kind.name, other)


def test_recording_is_deterministic():
    conv, qs = CONVERSATIONS[1]
    a = record(conv, qs, "evermemos", Hooks(), seed=5)
    b = record(conv, qs, "evermemos", Hooks(), seed=5)
    c = record(conv, qs, "evermemos", Hooks(), seed=6)
    assert a.export == b.export
    assert a.export["graph_id"] != c.export["graph_id"]


@pytest.mark.slow
def test_attribution_cli_accepts_the_benchmark(built, tmp_path):
    from toolkits.attribution import cli as attribution_cli

    out, _, manifest = built
    for split in ("long_context", "rag", "mem0", "evermemos"):
        target = tmp_path / f"{split}.json"
        with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
            code = attribution_cli.main([str(out / "bench"), split, "--output-path", str(target),
                                               "--exploration-strategy", "evidence_flow", "--no-progress",
                                               "--no-provide-starting-nodes", "--bootstrap-samples", "0"])
        assert code == 0
        data = json.loads(target.read_text())
        assert data["metrics"]["total_cases"] == sum(1 for m in manifest if m["split"] == split)
        assert len(data["results"]) == data["metrics"]["total_cases"]
