"""A tiny builder of exported execution graphs (smartcomment 0.1.2 JSON) for unit cases."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

import pytest


@dataclass
class ToyGraph:
    """Builds an export dict node by node; every record gets the next millisecond."""

    graph_id: str = "graph-toy"
    session_id: str = "toy-session"
    _ms: int = 0
    nodes: list[dict[str, Any]] = field(default_factory=list)
    edges: list[dict[str, Any]] = field(default_factory=list)
    ops: list[dict[str, Any]] = field(default_factory=list)
    _versions: dict[str, int] = field(default_factory=dict)

    def _ts(self) -> str:
        self._ms += 1
        return f"2026-01-01 00:00:{self._ms // 1000:02d}.{self._ms % 1000:03d}"

    def _common(self) -> dict[str, Any]:
        return {"created_at": self._ts(), "filename": "toy.py", "lineno": 1, "graph_id": self.graph_id,
                "user_id": None, "project_id": None, "session_id": self.session_id, "metadata": {},
                "trigger_point": "toy.py:1"}

    def node(self, name: str, value: Any, *, category: str = "variable", class_name: str | None = None,
             metadata: dict[str, Any] | None = None) -> str:
        """Add the next version of `name`; dict/list values are JSON-encoded, str repr-encoded."""
        full_name = f"{class_name}:{name}" if class_name else name
        version = self._versions.get(full_name, 0) + 1
        self._versions[full_name] = version
        raw = json.dumps(value, indent=4, sort_keys=True) if isinstance(value, dict | list) else repr(value)
        rec = self._common()
        rec.update(name=name, version=version, value=raw, comment=None, category=category,
                   class_name=class_name, full_name=full_name, node_id=f"{name}@{version}",
                   full_node_id=f"{full_name}@{version}", metadata=metadata or {})
        self.nodes.append(rec)
        return rec["full_node_id"]

    def message(self, mid: str, text: str, name: str = "Caroline") -> str:
        return self.node(mid, {"content": text, "name": name, "role": "user",
                               "timestamp": "2023-05-08T13:56:00"}, category="message")

    def parameter(self, name: str, value: Any) -> str:
        """A tunable parameter node (class and category ``parameter``), as the layers record them."""
        return self.node(name, value, category="parameter", class_name="parameter")

    def op(self, name: str, category: str) -> str:
        rec = self._common()
        op_id = f"op-{len(self.ops):032d}"
        rec.update(op_id=op_id, op_name=name, comment=None, category=category)
        self.ops.append(rec)
        return op_id

    def edge(self, op_id: str, source: str, target: str, category: str = "operation") -> None:
        rec = self._common()
        rec.update(edge_id=f"edge-{len(self.edges):032d}", op_id=op_id, category=category,
                   source_full_node_id=source, target_full_node_id=target, comment=None)
        self.edges.append(rec)

    def link(self, op_id: str, sources: list[str], targets: list[str], category: str = "operation") -> None:
        for s in sources:
            for t in targets:
                self.edge(op_id, s, t, category)

    def export(self) -> dict[str, Any]:
        session = self._common()
        session.update(session_id=self.session_id, session_name=None, comment=None, category="memory_construction")
        return {"graph_id": self.graph_id, "user_id": None, "project_id": None, "storage_path": None,
                "strict": True, "driver_type": "in_memory", "created_at": "2026-01-01 00:00:00.000",
                "metadata": {}, "data": {"nodes": self.nodes, "edges": self.edges, "operations": self.ops,
                                         "sessions": [session]}}

    # ---------------------------------------------------------------- query-time helpers
    def ask(self, qid: str, question: str, retrieved: list[str], *, evidence: list[str] | None = None,
            prediction: str = "wrong") -> dict[str, str]:
        """Add query, retrieval op, QA op (context + prediction); return the ids."""
        query = self.node(qid, question, category="message & query", class_name="query",
                          metadata={"evidence": evidence or []})
        search = self.op("memory_system.search_vector_store", "retrieval")
        for unit in retrieved:
            self.edge(search, query, unit)
        qa = self.op("question-answering", "evaluation")
        texts = []
        for unit in retrieved:
            raw = next(n["value"] for n in self.nodes if n["full_node_id"] == unit)
            texts.append(raw)
        context = self.node("ctx-" + qid, "\n\n".join(texts), category="memory_context", class_name="context")
        self.link(qa, retrieved, [context])
        prompt = self.node("question-answering-prompt", "Question: $question", category="prompt")
        pred = self.node("pred-" + qid, prediction, category="llm_response", class_name="prediction")
        self.link(qa, [query, context, prompt], [pred])
        return {"query": query, "search": search, "qa": qa, "context": context, "prediction": pred}


@pytest.fixture
def toy() -> ToyGraph:
    return ToyGraph()


def make_case(query: str, golden: str, evidence: list[str], prediction: str = "wrong", question: str = "",
              **annotation: Any) -> dict[str, Any]:
    return {"query_full_node_id": query, "query": question, "golden_answer": golden, "prediction": prediction,
            "source_evidence_full_node_ids": evidence, "metadata": {"annotation": annotation}}


@pytest.fixture
def case_factory():
    return make_case
