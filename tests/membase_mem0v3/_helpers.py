"""Shared pieces of the Mem0v3 tests: a layer on the fake models and a traced question, end to end.

The `traced_question` fixture (conftest.py) wraps `TracedQuestion`.

The Mem0v3 layer runs on mem0ai 2.x, which conflicts with the mem0ai 1.0.5 of the main venv: these
tests run in their own venv (`.venv-mem0v3`, CI's `.venv-ci-mem0v3`); elsewhere every file except
the requirement check skips itself with `importorskip`.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

NEEDS_MEM0V3 = "the Mem0v3 layer needs mem0ai 2.x in its own venv: pip install -e '.[dev,mem0v3]'"


@dataclass(kw_only=True)
class TracedRun:
    """One traced construction + search + answer of a single question."""

    layer: Any
    graph: Any
    entries: list[Any]
    query_id: str

    def ops(self, name: str) -> list[Any]:
        return [op for op in self.graph.get_all_operations() if op.op_name == name]

    def edges(self, op: Any) -> list[Any]:
        return [e for e in self.graph.get_all_edges() if e.op_id == op.op_id]


def make_config(tmp_path: Path, **overrides: Any) -> Any:
    from membase.layers.mem0v3 import Mem0v3Config

    fields: dict[str, Any] = dict(
        user_id="mem0v3-user",
        save_dir=str(tmp_path / "mem0v3-user"),
        llm_provider="fake",
        llm_model="mem0v3-fake",
        embedder_provider="fake",
        embedding_model_dims=64,
    )
    fields.update(overrides)
    return Mem0v3Config(**fields)


def _answer(run_entries: list[Any], question: str, qa_id: str, prediction: str) -> None:
    """Record the question-answering op the evaluation runner records (spec §4.5)."""
    from smartcomment import comment_op, comment_op_scope, comment_variable

    prompt_rv = comment_variable(
        "Question: $question\nMemories:\n$context", to_runtime=True,
        id_strategy=lambda _t: "question-answering-prompt", category="prompt",
        metadata={"op_type": "question-answering"},
    )
    context = "\n\n".join(f"### Memory {i}:\n{e.formatted_content}" for i, e in enumerate(run_entries))
    context_item = (context, {"class_name": "context", "category": "memory_context"})
    memories = [({"id": e.metadata["trace_id"]}, {"id_strategy": lambda v: v["id"], "identity_only": True})
                for e in run_entries]
    with comment_op_scope(op_name="question-answering", category="evaluation"):
        comment_op(inputs=memories, outputs=[context_item], reuse_op=True)
        comment_op(
            inputs=[(question, {"class_name": "query", "id_strategy": lambda _q: qa_id}), context_item, prompt_rv],
            outputs=[(prediction, {"class_name": "prediction", "category": "llm_response"})],
            reuse_op=True,
        )


class TracedQuestion:
    """`run(messages, question, evidence, prediction, k=5, chat_model=None, before_search=None, **config)`
    -> `TracedRun`; `before_search(layer)` runs between construction and search."""

    def __init__(self, tmp_path: Path) -> None:
        self.tmp_path = tmp_path
        self.layers: list[Any] = []

    def __call__(self, messages: Sequence[Any], question: str, evidence: Sequence[str], prediction: str, *,
                 k: int = 5, chat_model: Any = None, before_search: Any = None, **overrides: Any) -> TracedRun:
        from membase.layers.mem0v3 import Mem0v3Layer
        from smartcomment import comment_graph, comment_session, comment_variable, current_context

        layer = Mem0v3Layer(make_config(self.tmp_path / f"run{len(self.layers)}", **overrides), chat_model=chat_model)
        self.layers.append(layer)
        qa_id = "mem0v3-qa-1"
        with comment_graph(user_id="mem0v3-user", project_id="Mem0v3", strict=True) as graph:
            with comment_session(session_id="session-1", category="memory_construction"):
                for item in messages:
                    layer.add_message(item)
            if before_search is not None:
                before_search(layer)
            with comment_session(category="memory_search"):
                comment_variable(question, variable_name="query", id_strategy=lambda _: qa_id, class_name="query",
                                 category="message & query", metadata={"evidence": list(evidence)})
                entries = layer.retrieve(question, k=k)
                current_context().remove_variable("query")
            with comment_session(category="memory_evaluation"):
                _answer(entries, question, qa_id, prediction)
        return TracedRun(layer=layer, graph=graph, entries=entries, query_id=f"query:{qa_id}@1")

    def close(self) -> None:
        for layer in self.layers:
            layer.cleanup()


def message(i: int, content: str, name: str = "Ana") -> Any:
    from membase.types import Message

    return Message(id=f"mem0v3-message-{i}", name=name, role="user", content=content,
                   timestamp=f"2024-03-{i:02d}T10:00:00")
