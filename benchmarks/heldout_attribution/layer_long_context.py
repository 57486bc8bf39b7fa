"""Long-Context, recorded after spec-tracer-and-membase §4.4: one ``memory-unit`` whose versions
are the buffer text after each message, trimmed to the context window; retrieval returns it."""

from __future__ import annotations

from smartcomment import comment_mutation, comment_op, current_graph
from smartcomment.runtime.variable import RuntimeVariable

from .conversations import Conversation, ConvSession, Message, Question
from .plans import CasePlan
from .recording import Entry, OpLog, line_of, message_node
from .text_tools import answer_part, cut_before_answer, words

_UNIT = "memory-unit"


def _unit_id(_value: object) -> str:
    return _UNIT


class LongContextLayer:
    project_id = "Long-Context"
    top_k = 10

    def __init__(self, conv: Conversation, plan: CasePlan, log: OpLog, context_window: int) -> None:
        self.conv, self.plan, self.log = conv, plan, log
        self.context_window = context_window
        self.lines: list[tuple[str, str]] = []
        self.version_before: dict[str, str] = {}
        self._stale_for: dict[str, str] = {}
        if plan.kind.name == "lc/stale_snapshot":
            self._stale_for[plan.question.qid] = plan.target

    @property
    def text(self) -> str:
        return "\n".join(line for _, line in self.lines)

    def _line(self, message: Message, session: ConvSession) -> str:
        plan = self.plan
        if plan.kind.name == "lc/append_cut" and message.id == plan.target:
            kept = cut_before_answer(message.text, answer_part(plan.question, message))
            return f"Speaker {message.speaker} (role: user) says: {kept}\nTimestamp: {session.date_time}"
        return line_of(message, session)

    def _rewritten_lines(self, message: Message) -> list[tuple[str, str]]:
        plan = self.plan
        if plan.kind.name != "lc/compaction_rewrite" or message.id != plan.trigger or plan.question.rewrite is None:
            return self.lines
        target = self.conv.message(plan.target)
        session = self.conv.session_of(plan.target)
        rewritten = f"Speaker {target.speaker} (role: user) says: {plan.question.rewrite.text}\nTimestamp: {session.date_time}"
        return [(mid, rewritten if mid == plan.target else line) for mid, line in self.lines]

    def _trimmed(self, lines: list[tuple[str, str]]) -> tuple[list[tuple[str, str]], list[str]]:
        dropped: list[str] = []
        while len(lines) > 1 and sum(len(words(line)) for _, line in lines) > self.context_window:
            dropped.append(lines[0][0])
            lines = lines[1:]
        return lines, dropped

    def add_message(self, message: Message, session: ConvSession) -> None:
        node = message_node(self.conv, message, session, style="long_context")
        with comment_mutation(target=self, inputs=[node], id_strategy=_unit_id, encoding_fn=lambda layer: layer.text,
                              category="memory_entry", mutation_name="memory_system.memory_update",
                              mutation_category="update",
                              mutation_metadata={"context_window": self.context_window, "message_separator": "\n",
                                                 "llm_model_for_tokenizer": "gpt-4.1-mini"}) as mutation:
            self.version_before[message.id] = f"{_UNIT}@{current_graph().get_latest_variable(_UNIT).version}"
            lines = [*self._rewritten_lines(message), (message.id, self._line(message, session))]
            self.lines, dropped = self._trimmed(lines)
        op_id = current_graph().get_operations_by_variable(mutation.result.full_node_id)[0].op_id
        self.log.mark("append", message.id, op_id)
        for message_id in dropped:
            self.log.mark("trim", message_id, op_id)

    def flush(self) -> None:
        """Long-Context keeps no pending buffer."""

    def retrieve(self, question: Question, query: RuntimeVariable) -> list[Entry]:
        stale_target = self._stale_for.get(question.qid)
        if stale_target is not None:
            snapshot: object = current_graph().get_variable(self.version_before[stale_target])
            served = snapshot.raw_value  # type: ignore[attr-defined]
        else:
            snapshot = (self.text, {"id_strategy": _unit_id, "encoding_fn": lambda t: t, "category": "memory_entry"})
            served = self.text
        op = comment_op(inputs=[query], outputs=[snapshot], op_name="memory_system.retrieve", category="retrieval",
                        metadata={"top_k": self.top_k})
        self.log.mark("retrieve", question.qid, op.op_id)
        return [Entry(trace_id=_UNIT, formatted=f"<long_context_memory>\n{served}\n</long_context_memory>")]


def trim_window(conv: Conversation, target: str) -> int:
    """A context window that holds everything after ``target`` but not ``target`` too."""
    ids = [m.id for m in conv.messages()]
    after = [conv.message(i) for i in ids[ids.index(target) + 1:]]
    size = sum(len(words(line_of(m, conv.session_of(m.id)))) for m in after)
    return size + len(words(line_of(conv.message(target), conv.session_of(target)))) // 2
