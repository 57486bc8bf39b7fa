"""What the viewer reads from one graph export, built once per graph from the raw JSON.

The parser works on the exported dict (spec-tracer §3), not on an ``ExecNetwork``, so that the
dataset index can list a file's questions without importing the whole graph:

* **messages** — nodes of category ``message`` (query nodes excluded), in execution order, with
  the speaker, role and text read from the JSON value (the Mem0 metadata suffix and the
  Long-Context/NaiveRAG ``Speaker … says:`` wrapper are cut for display);
* **questions** — nodes of class ``query`` with category ``message`` or ``message & query``;
  adversarial questions (``question_type == "adversarial"``) and LongMemEval abstention ids
  (``_abs``) are skipped. Each is linked through its outgoing edges to its prediction
  (question-answering op), its judge op (golden answers, judge response, judge score) and the
  memory units its retrieval ops returned. Correct iff the judge score is 1.0; a question with
  no judge score anywhere downstream is *unjudged*;
* **indexes** — ops, edges by op / by endpoint / by id, and each session's edges in time order,
  so that the candidate subgraphs of §6 cost O(answer), not O(graph).
"""

from __future__ import annotations

import ast
import json
import re
from bisect import bisect_right
from collections import defaultdict, deque
from dataclasses import dataclass, field
from typing import Any, Literal, NamedTuple

from smartcomment.runtime.errors import MemTraceError

__all__ = [
    "MEM0_METADATA_SUFFIX",
    "QUERY_TIME_OP_CATEGORIES",
    "EdgeInfo",
    "GraphIndex",
    "MessageRecord",
    "NodeInfo",
    "NotAGraphError",
    "OpInfo",
    "QARecord",
    "build_graph_index",
    "is_graph_export",
]

MEM0_METADATA_SUFFIX = "\nBelow is this message's metadata:"
"""Mem0 appends the message metadata after this line; the viewer shows the text before it."""

QUERY_TIME_OP_CATEGORIES = frozenset({"retrieval", "evaluation"})
"""Op categories of answering a question (everything else builds memory)."""

_SPEAKER_WRAPPER = re.compile(r"^Speaker (?P<name>.*?) \(role: (?P<role>[^)]*)\) says: (?P<text>.*?)(?:\nTimestamp: .*)?$",
                              re.DOTALL)
_JUDGE_BFS_DEPTH = 4

QAStatus = Literal["correct", "wrong", "unjudged"]


class NotAGraphError(MemTraceError, ValueError):
    """Valid JSON that is not a smartcomment graph export (a manifest, a results file, …)."""


def is_graph_export(raw: Any) -> bool:
    """True for a dict shaped like ``ExecNetwork.export_graph()`` (``data.nodes`` is a list)."""
    return isinstance(raw, dict) and isinstance(raw.get("data"), dict) and isinstance(raw["data"].get("nodes"), list)


# NamedTuples, not frozen dataclasses: a 46k-node graph builds ~140k of these, and a frozen
# dataclass costs four times as much to construct.
class NodeInfo(NamedTuple):
    """The fields of a variable version that the indexes need (values stay in the graph)."""

    full_node_id: str
    full_name: str
    name: str
    class_name: str | None
    category: str
    session_id: str | None
    created_at: str
    order: int


class EdgeInfo(NamedTuple):
    """One edge of an operation."""

    edge_id: str
    source: str
    target: str
    op_id: str
    session_id: str | None
    created_at: str
    order: int


class OpInfo(NamedTuple):
    """One operation."""

    op_id: str
    op_name: str | None
    category: str | None
    session_id: str | None
    created_at: str

    @property
    def label(self) -> str:
        """``name (category)`` for lists and legends."""
        return f"{self.op_name or 'unnamed op'} ({self.category or '?'})"


@dataclass(frozen=True, kw_only=True, slots=True)
class MessageRecord:
    """One conversation message, as the timeline shows it."""

    full_node_id: str
    message_id: str
    """The node name (the dataset's message id, e.g. ``U1:D2:2``)."""
    session_id: str | None
    created_at: str
    speaker: str
    role: str
    text: str
    timestamp: str
    position: int
    """Index in the timeline (execution order)."""


@dataclass(kw_only=True, slots=True)
class QARecord:
    """One question of the run and what happened to it."""

    qa_id: str
    query_full_node_id: str
    query_full_name: str
    question: str
    question_type: str | None
    created_at: str
    status: QAStatus
    prediction_id: str | None = None
    prediction: str | None = None
    qa_op_id: str | None = None
    judge_op_id: str | None = None
    judge_response: str | None = None
    judge_score: str | None = None
    golden_answers_id: str | None = None
    golden_answer: str | None = None
    retrieval_op_ids: tuple[str, ...] = ()
    retrieved_ids: tuple[str, ...] = ()
    evidence_names: tuple[str, ...] = ()
    evidence_ids: tuple[str, ...] = ()
    """Latest version of each evidence name (unresolvable names are in ``missing_evidence``)."""
    missing_evidence: tuple[str, ...] = ()
    annotations: tuple[dict[str, Any], ...] = ()
    """MemTraceBench ``data.annotations`` entries whose ``query_id`` is this query."""

    @property
    def annotation(self) -> dict[str, Any] | None:
        """The first benchmark annotation of this question, if any."""
        return self.annotations[0] if self.annotations else None

    @property
    def case_evidence_ids(self) -> list[str]:
        """Evidence for attribution: the annotation's source evidence, else the query's."""
        ann = self.annotation
        if ann and ann.get("source_evidence_ids"):
            return [str(e) for e in ann["source_evidence_ids"]]
        return list(self.evidence_ids)

    @property
    def golden_display(self) -> str:
        """The golden answer(s) as plain text (``a, b``)."""
        ann = self.annotation
        if self.golden_answer is None and ann and isinstance(ann.get("golden_answers"), list):
            return ", ".join(str(g) for g in ann["golden_answers"])
        return self.golden_answer or self.case_golden_answer

    @property
    def case_golden_answer(self) -> str:
        """The golden answer as the benchmark formats it (``[a, b]`` for lists)."""
        ann = self.annotation
        if ann and "golden_answers" in ann:
            gold = ann["golden_answers"]
            return "[" + ", ".join(str(g) for g in gold) + "]" if isinstance(gold, list) else str(gold)
        return self.golden_answer or ""


@dataclass(kw_only=True)
class GraphIndex:
    """Indexes of one graph for the viewer (read-only after :func:`build_graph_index`)."""

    graph_id: str
    user_id: str | None
    project_id: str | None
    metadata: dict[str, Any]
    node_count: int
    nodes: dict[str, NodeInfo]
    latest: dict[str, str]
    """full_name -> full_node_id of its last inserted version (smartcomment's "latest")."""
    ops: dict[str, OpInfo]
    edges: dict[str, EdgeInfo]
    op_edges: dict[str, list[EdgeInfo]]
    out_edges: dict[str, list[EdgeInfo]]
    in_edges: dict[str, list[EdgeInfo]]
    sessions: dict[str, dict[str, Any]]
    messages: list[MessageRecord]
    qas: list[QARecord]
    skipped_questions: int = 0
    """Adversarial / abstention questions left out."""
    annotations: list[dict[str, Any]] = field(default_factory=list)
    _session_edges: dict[str, list[EdgeInfo]] = field(default_factory=dict, repr=False)
    """Each session's edges in recording order."""
    _edge_pos: dict[str, int] = field(default_factory=dict, repr=False)
    """edge id -> position in its session's list."""
    _message_pos: dict[str, int] = field(default_factory=dict, repr=False)
    _message_windows: list[tuple[str, int, int]] = field(default_factory=list, repr=False)
    """Per message: (session, start, end) slice of the session's edges that processed it."""
    _qa_by_id: dict[str, QARecord] = field(default_factory=dict, repr=False)

    # -- lookups ------------------------------------------------------------------------------
    def qa(self, qa_id: str) -> QARecord | None:
        """A question by qa id or query node id."""
        return self._qa_by_id.get(qa_id)

    def message(self, full_node_id: str) -> MessageRecord | None:
        """A message by full node id."""
        pos = self._message_pos.get(full_node_id)
        return None if pos is None else self.messages[pos]

    def has_op(self, op_id: str) -> bool:
        """True when the op exists and has at least one edge (the ops an annotation may name)."""
        return bool(self.op_edges.get(op_id))

    def is_construction_op(self, op_id: str) -> bool:
        """Ops that build memory (not retrieval / evaluation)."""
        op = self.ops.get(op_id)
        return op is not None and op.category not in QUERY_TIME_OP_CATEGORIES

    # -- the candidate subgraphs of spec §6 (as op id lists) -----------------------------------
    def message_op_ids(self, message_full_node_id: str) -> list[str]:
        """Ops that processed a message: the construction ops with edges in the message's session
        from the message's first edge up to the next message's (spec §6 time window, taken in
        recording order because many records share a millisecond), plus those touching it."""
        pos = self._message_pos.get(message_full_node_id)
        if pos is None:
            return []
        session, start, end = self._message_windows[pos]
        ops: dict[str, None] = {}
        for e in self._session_edges.get(session, [])[start:end]:
            if self.is_construction_op(e.op_id):
                ops[e.op_id] = None
        for e in (*self.out_edges.get(message_full_node_id, ()), *self.in_edges.get(message_full_node_id, ())):
            if self.is_construction_op(e.op_id):
                ops.setdefault(e.op_id, None)
        return sorted(ops, key=self._op_sort_key)

    def retrieval_op_ids(self, qa: QARecord) -> list[str]:
        """The question's retrieval ops, else the retrieval ops recorded between the query's
        first outgoing edge and the first edge that reaches a memory unit."""
        ops: dict[str, None] = dict.fromkeys(qa.retrieval_op_ids)
        first = min(self.out_edges.get(qa.query_full_node_id, ()), key=lambda e: e.order, default=None)
        if first is not None:
            session = first.session_id or ""
            edges = self._session_edges.get(session, [])
            for e in edges[self._edge_pos.get(first.edge_id, len(edges)):]:
                op = self.ops.get(e.op_id)
                if op is not None and op.category == "evaluation":
                    break
                if op is not None and op.category == "retrieval":
                    ops.setdefault(e.op_id, None)
                target = self.nodes.get(e.target)
                if target is not None and target.category == "memory_entry":
                    break
        return sorted(ops, key=self._op_sort_key)

    def response_op_ids(self, qa: QARecord) -> list[str]:
        """The question-answering op and the judge op of the question (those that exist)."""
        return [op for op in (qa.qa_op_id, qa.judge_op_id) if op and op in self.ops]

    def _op_sort_key(self, op_id: str) -> tuple[int, str]:
        # recording order of the op's first edge (created_at often ties within a millisecond)
        edges = self.op_edges.get(op_id)
        return (edges[0].order if edges else 1 << 62, op_id)


# ------------------------------------------------------------------------------- building
def _text(value: Any) -> str:
    return "" if value is None else str(value)


def _unrepr(value: str) -> str:
    """Questions are stored as ``repr(question)``: show the string itself."""
    v = value.strip()
    if len(v) >= 2 and v[0] == v[-1] and v[0] in "'\"":
        try:
            out = ast.literal_eval(v)
        except (ValueError, SyntaxError):
            return value
        return out if isinstance(out, str) else value
    return value


def _message_fields(raw_value: str, metadata: dict[str, Any]) -> tuple[str, str, str, str]:
    """(speaker, role, text, timestamp) of a message node."""
    parsed: Any = None
    try:
        parsed = json.loads(raw_value)
    except (ValueError, TypeError):
        parsed = None
    if isinstance(parsed, dict):
        content = _text(parsed.get("content"))
        speaker = _text(parsed.get("name"))
        role = _text(parsed.get("role"))
        timestamp = _text(parsed.get("timestamp"))
    else:
        content, speaker, role, timestamp = _unrepr(raw_value), "", "", ""
    content = content.split(MEM0_METADATA_SUFFIX, 1)[0]
    wrapped = _SPEAKER_WRAPPER.match(content)
    if wrapped:
        content = wrapped.group("text")
        speaker = speaker or wrapped.group("name")
        role = role or wrapped.group("role")
    role = _text(metadata.get("speaker_role") or metadata.get("role")) or role
    if not speaker:
        who = metadata.get("speaker") or metadata.get("speakers")
        speaker = who if isinstance(who, str) else ""
    timestamp = timestamp or _text(metadata.get("timestamp"))
    return speaker or "?", role or "?", content.strip(), timestamp


def _is_skipped_question(name: str, metadata: dict[str, Any]) -> bool:
    qtype = str(metadata.get("question_type") or "").lower()
    return qtype == "adversarial" or "_abs" in name


def _score_status(score: str | None) -> QAStatus:
    if score is None:
        return "unjudged"
    try:
        return "correct" if float(score) == 1.0 else "wrong"
    except ValueError:
        return "wrong"


def _message_windows(messages: list[MessageRecord], ops: dict[str, OpInfo], out_edges: dict[str, list[EdgeInfo]],
                     in_edges: dict[str, list[EdgeInfo]], session_edges: dict[str, list[EdgeInfo]],
                     edge_pos: dict[str, int]) -> list[tuple[str, int, int]]:
    """Per message, the slice of its session's edges from its anchor to the next message's.

    The anchor is the first edge of the first construction op that touches the message (every
    layer feeds the message straight into its first op), else the first session edge recorded at or after the message. Messages
    that share an anchor (one op ingesting a batch) share the window.
    """
    def construction(op_id: str) -> bool:
        op = ops.get(op_id)
        return op is not None and op.category not in QUERY_TIME_OP_CATEGORIES

    op_start: dict[tuple[str, str], int] = {}
    for session, edges in session_edges.items():
        for i, e in enumerate(edges):
            op_start.setdefault((session, e.op_id), i)
    anchors: list[int] = []
    for m in messages:
        session = m.session_id or ""
        edges = session_edges.get(session, [])
        direct = [op_start[(session, e.op_id)]
                  for e in (*out_edges.get(m.full_node_id, ()), *in_edges.get(m.full_node_id, ()))
                  if construction(e.op_id) and (e.session_id or "") == session]
        if direct:
            anchors.append(min(direct))
        else:
            anchors.append(next((i for i, e in enumerate(edges) if e.created_at >= m.created_at), len(edges)))
    by_session: dict[str, list[int]] = defaultdict(list)
    for pos, m in enumerate(messages):
        by_session[m.session_id or ""].append(anchors[pos])
    for lst in by_session.values():
        lst.sort()
    windows = []
    for pos, m in enumerate(messages):
        session = m.session_id or ""
        starts = by_session[session]
        later = bisect_right(starts, anchors[pos])
        end = starts[later] if later < len(starts) else len(session_edges.get(session, []))
        windows.append((session, anchors[pos], end))
    return windows


class _Nodes(NamedTuple):
    nodes: dict[str, NodeInfo]
    values: dict[str, str]
    metadata_of: dict[str, dict[str, Any]]
    latest: dict[str, str]


class _Edges(NamedTuple):
    edges: dict[str, EdgeInfo]
    op_edges: dict[str, list[EdgeInfo]]
    out_edges: dict[str, list[EdgeInfo]]
    in_edges: dict[str, list[EdgeInfo]]
    session_edges: dict[str, list[EdgeInfo]]


def _index_nodes(data: dict[str, Any]) -> _Nodes:
    table = _Nodes({}, {}, {}, {})
    raw_nodes: list[dict[str, Any]] = [n for n in data.get("nodes") or [] if isinstance(n, dict)]
    for i, n in enumerate(raw_nodes):
        get = n.get
        class_name = get("class_name")
        name = _text(get("name"))
        full_name = get("full_name") or (f"{class_name}:{name}" if class_name else name)
        full_node_id = get("full_node_id") or f"{full_name}@{get('version', 1)}"
        table.nodes[full_node_id] = NodeInfo(full_node_id, full_name, name, class_name, get("category") or "variable",
                                             get("session_id"), get("created_at") or "", i)
        table.values[full_node_id] = get("value") or ""
        md = get("metadata")
        table.metadata_of[full_node_id] = md if isinstance(md, dict) else {}
        table.latest[full_name] = full_node_id
    return table


def _index_ops(data: dict[str, Any]) -> dict[str, OpInfo]:
    ops: dict[str, OpInfo] = {}
    for o in data.get("operations") or []:
        if isinstance(o, dict) and o.get("op_id"):
            ops[o["op_id"]] = OpInfo(o["op_id"], o.get("op_name"), o.get("category"), o.get("session_id"),
                                     _text(o.get("created_at")))
    return ops


def _index_edges(data: dict[str, Any]) -> _Edges:
    table = _Edges({}, defaultdict(list), defaultdict(list), defaultdict(list), defaultdict(list))
    for i, e in enumerate(data.get("edges") or []):
        if not isinstance(e, dict):
            continue
        get = e.get
        rec = EdgeInfo(get("edge_id") or "", get("source_full_node_id") or "", get("target_full_node_id") or "",
                       get("op_id") or "", get("session_id"), get("created_at") or "", i)
        table.edges[rec.edge_id] = rec
        table.op_edges[rec.op_id].append(rec)
        table.out_edges[rec.source].append(rec)
        table.in_edges[rec.target].append(rec)
        table.session_edges[rec.session_id or ""].append(rec)
    return table


def _by_time(e: EdgeInfo) -> tuple[str, int]:
    return (e.created_at, e.order)


def _index_messages(table: _Nodes) -> list[MessageRecord]:
    """The message nodes (query nodes excluded), in execution order."""
    msg_infos = sorted((info for info in table.nodes.values()
                        if info.category == "message" and info.class_name != "query"),
                       key=lambda x: (x.created_at, x.order))
    messages: list[MessageRecord] = []
    for pos, info in enumerate(msg_infos):
        speaker, role, text, timestamp = _message_fields(table.values[info.full_node_id],
                                                         table.metadata_of[info.full_node_id])
        messages.append(MessageRecord(full_node_id=info.full_node_id, message_id=info.name, session_id=info.session_id,
                                      created_at=info.created_at, speaker=speaker, role=role, text=text,
                                      timestamp=timestamp, position=pos))
    return messages


@dataclass(frozen=True, kw_only=True)
class _QuestionLinker:
    """Links one question node to its prediction, judge, retrieved units, evidence and annotations."""

    nodes: _Nodes
    edges: _Edges
    ops: dict[str, OpInfo]
    annotations_by_query: dict[str, list[dict[str, Any]]]

    def node_class(self, node_id: str) -> str | None:
        info = self.nodes.nodes.get(node_id)
        return info.class_name if info else None

    def first_judge_score(self, start: str) -> str | None:
        seen = {start}
        queue = deque([(start, 0)])
        while queue:
            current, depth = queue.popleft()
            for e in sorted(self.edges.out_edges.get(current, ()), key=_by_time):
                if self.node_class(e.target) == "judge_score":
                    return self.nodes.values.get(e.target)
                if e.target not in seen and depth + 1 < _JUDGE_BFS_DEPTH:
                    seen.add(e.target)
                    queue.append((e.target, depth + 1))
        return None

    def _follow_question_edges(self, qa: QARecord) -> None:
        values = self.nodes.values
        retrieval_ops: dict[str, None] = {}
        retrieved: dict[str, None] = {}
        for e in sorted(self.edges.out_edges.get(qa.query_full_node_id, ()), key=_by_time):
            target_class = self.node_class(e.target)
            op = self.ops.get(e.op_id)
            if target_class == "prediction":
                qa.prediction_id, qa.prediction, qa.qa_op_id = e.target, _unrepr(values.get(e.target, "")), e.op_id
            elif target_class == "judge_response":
                qa.judge_op_id, qa.judge_response = e.op_id, _unrepr(values.get(e.target, ""))
            if op is not None and op.category == "retrieval":
                retrieval_ops[e.op_id] = None
            target = self.nodes.nodes.get(e.target)
            if target is not None and target.category == "memory_entry":
                retrieved[e.target] = None
                retrieval_ops.setdefault(e.op_id, None)
        qa.retrieval_op_ids = tuple(retrieval_ops)
        qa.retrieved_ids = tuple(retrieved)

    def _read_judge(self, qa: QARecord) -> None:
        if qa.judge_op_id:
            for e in self.edges.op_edges.get(qa.judge_op_id, ()):
                if self.node_class(e.source) == "golden_answers":
                    qa.golden_answers_id, qa.golden_answer = e.source, self.nodes.values.get(e.source)
                if self.node_class(e.target) == "judge_score":
                    qa.judge_score = self.nodes.values.get(e.target)
        if qa.judge_score is None:
            qa.judge_score = self.first_judge_score(qa.query_full_node_id)
        qa.status = _score_status(qa.judge_score)

    def question(self, info: NodeInfo) -> QARecord:
        md = self.nodes.metadata_of[info.full_node_id]
        qa = QARecord(qa_id=info.name, query_full_node_id=info.full_node_id, query_full_name=info.full_name,
                      question=_unrepr(self.nodes.values[info.full_node_id]), question_type=md.get("question_type"),
                      created_at=info.created_at, status="unjudged")
        self._follow_question_edges(qa)
        self._read_judge(qa)
        evidence = md.get("evidence") or []
        names = [evidence] if isinstance(evidence, str) else [str(x) for x in evidence if x is not None]
        latest = self.nodes.latest
        qa.evidence_names = tuple(names)
        qa.evidence_ids = tuple(latest[n] for n in names if n in latest)
        qa.missing_evidence = tuple(n for n in names if n not in latest)
        qa.annotations = tuple(self.annotations_by_query.get(info.full_node_id, ()))
        return qa


def build_graph_index(raw: dict[str, Any]) -> GraphIndex:
    """Index one exported graph (the dict of ``ExecNetwork.export_graph()`` / a graph file).

    Raises:
        NotAGraphError: ``raw`` is not a graph export.
    """
    if not is_graph_export(raw):
        raise NotAGraphError("not a smartcomment graph export (no data.nodes list)")
    data = raw["data"]
    node_table = _index_nodes(data)
    nodes = node_table.nodes
    ops = _index_ops(data)
    edge_table = _index_edges(data)
    session_edges = edge_table.session_edges

    # edges are appended to the export as they are recorded: list order is execution order
    edge_pos: dict[str, int] = {}
    for bucket in session_edges.values():
        for i, e in enumerate(bucket):
            edge_pos[e.edge_id] = i

    sessions = {s["session_id"]: {"category": s.get("category"), "created_at": _text(s.get("created_at")),
                                  "name": s.get("session_name")}
                for s in data.get("sessions") or [] if isinstance(s, dict) and s.get("session_id")}

    messages = _index_messages(node_table)
    windows = _message_windows(messages, ops, edge_table.out_edges, edge_table.in_edges, session_edges, edge_pos)

    annotations = [a for a in data.get("annotations") or [] if isinstance(a, dict)]
    ann_by_query: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for a in annotations:
        ann_by_query[_text(a.get("query_id"))].append(a)

    linker = _QuestionLinker(nodes=node_table, edges=edge_table, ops=ops, annotations_by_query=ann_by_query)
    qas: list[QARecord] = []
    skipped = 0
    query_infos = sorted((info for info in nodes.values()
                          if info.class_name == "query" and info.category in ("message", "message & query")),
                         key=lambda x: (x.created_at, x.order))
    for info in query_infos:
        if _is_skipped_question(info.name, node_table.metadata_of[info.full_node_id]):
            skipped += 1
            continue
        qas.append(linker.question(info))

    index = GraphIndex(
        graph_id=_text(raw.get("graph_id")), user_id=raw.get("user_id"), project_id=raw.get("project_id"),
        metadata=raw.get("metadata") if isinstance(raw.get("metadata"), dict) else {},
        node_count=len(nodes), nodes=nodes, latest=node_table.latest, ops=ops, edges=edge_table.edges,
        op_edges=dict(edge_table.op_edges), out_edges=dict(edge_table.out_edges), in_edges=dict(edge_table.in_edges),
        sessions=sessions, messages=messages, qas=qas, skipped_questions=skipped, annotations=annotations,
        _session_edges=dict(session_edges), _edge_pos=edge_pos,
        _message_pos={m.full_node_id: m.position for m in messages}, _message_windows=windows,
    )
    for qa in qas:
        index._qa_by_id.setdefault(qa.qa_id, qa)
        index._qa_by_id.setdefault(qa.query_full_node_id, qa)
    return index
