"""Shared helpers of the runner tests: a real fixture graph and simple cases."""

from __future__ import annotations

import asyncio
import json
from dataclasses import dataclass, field

import pytest


@dataclass
class Case:
    query_full_node_id: str
    query: str = "'Where did Caroline move from four years ago?'"
    golden_answer: str = "Sweden"
    prediction: str = "Norway"
    source_evidence_full_node_ids: list[str] = field(default_factory=list)
    judge_response: str | None = None
    metadata: dict = field(default_factory=dict)


@pytest.fixture
def bench_graph(fixtures_dir):
    from smartcomment.runtime.network import ExecNetwork

    data = json.loads((fixtures_dir / "sc012_memtracebench_like.json").read_text())
    return ExecNetwork.import_graph(data)


OP_UPDATE_5 = "op-2893695d32274e23b17111a365ca9afa"  # update_memory_decision of the Sweden message
OP_SEARCH_1 = "op-382b3ccc1309460b8719625b8bac0683"
OP_QA_1 = "op-f94e7c77628d43bd9f25c228f1961a9e"
OP_EXTRACT_5 = "op-ad912fa103d643e0b4b16a3e9e7169cb"


def _annotation(query_id, query, golden, error_type, op_id, evidence):
    return {
        "query_id": query_id,
        "query": query,
        "golden_answers": [golden],
        "golden_answers_id": "golden_answers:list:x@1",
        "prediction": "Norway",
        "prediction_id": "prediction:str:y@1",
        "source_evidence_ids": evidence,
        "final_error_type": error_type,
        "final_op_id": op_id,
    }


@pytest.fixture
def bench_dir(fixtures_dir, tmp_path):
    """A two-file MemTraceBench `mem0` split: 4 memory-error cases + 1 non-memory annotation."""
    base = json.loads((fixtures_dir / "sc012_memtracebench_like.json").read_text())
    q1 = ("query:locomo-qa-1-1@1", "'When did Caroline go to the LGBTQ support group?'", "7 May 2023")
    q2 = ("query:locomo-qa-1-2@1", "'Where did Caroline move from four years ago?'", "Sweden")
    a = json.loads(json.dumps(base))
    a["graph_id"] = "graph-aaaa"
    a["metadata"]["memtracebench_graph_filename"] = "a.json"
    a["data"]["annotations"] = [
        _annotation(*q2, "ExtractionError", OP_EXTRACT_5, ["U1:D2:2@1"]),
        _annotation(*q1, "RetrievalError", OP_SEARCH_1, ["U1:D1:3@1"]),
        _annotation(*q1, "AnnotationError", OP_SEARCH_1, []),
    ]
    b = json.loads(json.dumps(base))
    b["graph_id"] = "graph-bbbb"
    b["metadata"]["memtracebench_graph_filename"] = "b.json"
    b["metadata"]["memtracebench_dataset_source"] = "LongMemEval"
    b["data"]["annotations"] = [
        _annotation(*q2, "UpdateError", OP_UPDATE_5, ["U1:D2:2@1"]),
        _annotation(*q1, "ResponseError", OP_QA_1, ["U1:D1:3@1"]),
    ]
    split = tmp_path / "bench" / "mem0"
    split.mkdir(parents=True)
    (split / "a.json").write_text(json.dumps(a))
    (split / "b.json").write_text(json.dumps(b))
    return tmp_path / "bench"


def child_env(repo) -> dict:
    """Environment of a CLI subprocess: the repository on ``PYTHONPATH``.

    Under mutmut (``mutmut run``) a child inherits the mutant under test, so the mutant runs there
    too; only mutmut's "stats" pass is dropped, as a child cannot report its coverage back.
    """
    import os

    env = {**os.environ, "PYTHONPATH": str(repo)}
    if env.get("MUTANT_UNDER_TEST") == "stats":
        del env["MUTANT_UNDER_TEST"]
    return env


def interrupt_after_the_run(monkeypatch: pytest.MonkeyPatch) -> None:
    """Make the attribution CLI's event loop finish every case and then raise KeyboardInterrupt
    (Ctrl-C right after the last case)."""
    real_run = asyncio.run

    def run_then_interrupt(coro):  # noqa: ANN001, ANN202
        real_run(coro)
        raise KeyboardInterrupt

    monkeypatch.setattr(asyncio, "run", run_then_interrupt)
