"""Tracing of mem0ai 1.0.5 from the outside, with monkey-patch specs on one `Memory` instance.

mem0's `Memory.add` runs `_add_to_vector_store` in a worker thread. Its inferring path makes two
LLM calls (fact extraction: system + user message; update decision: one user message), searches
the vector store once per fact, then calls `_create_memory` / `_update_memory` / `_delete_memory`
per action. We wrap exactly those instance attributes:

| wrapped | records |
| --- | --- |
| `memory.add` | captures the caller's contextvars context for the worker thread |
| `memory._add_to_vector_store` | runs in that context; opens per-call state; closes the decision op |
| `memory.llm.generate_response` | op `memory_system.extract_facts` (messages + system prompt -> raw -> cleaned -> facts); op `memory_system.update_memory_decision` (facts, existing memories, template -> instruction -> raw -> cleaned -> update_action) |
| `memory.vector_store.search` | the similar memories shown to the decision (its `existing_memories` node) |
| `memory._create_memory` | ADD: update_action -> `memory-unit-<id>@1` |
| `memory._update_memory` | UPDATE: mutation `memory-unit-<id>@k -> @k+1` plus update_action -> @k+1 (`llm_response`) |
| `memory._delete_memory` | DELETE: `memory-unit-<id>` -> `delete_marker` |

Cleaned outputs are recomputed with mem0's own `remove_code_blocks` / `extract_json`. Nothing here
raises into mem0: a recording failure is logged and the host call proceeds.
"""

from __future__ import annotations

import contextlib
import contextvars
import json
import logging
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

from membase.layers.parameters import ParameterTracer
from membase.layers.tracing import json_encode, memory_unit_identity, memory_unit_options, tracing_active
from membase.utils.patching import PatchSpec, make_attr_patch

__all__ = ["Mem0Tracer", "RAW_INPUT_PREFIX"]

logger = logging.getLogger(__name__)

RAW_INPUT_PREFIX = "raw_input_"
DELETE_MARKER = "DELETED"


@dataclass
class _AddState:
    """Per `_add_to_vector_store` call."""

    infer: bool
    metadata: dict[str, Any]
    stack: contextlib.ExitStack = field(default_factory=contextlib.ExitStack)
    facts_rv: Any = None
    facts: list[str] = field(default_factory=list)
    search_hits: list[tuple[str, str, dict[str, Any]]] = field(default_factory=list)
    """(memory id, text, payload) of every vector-store hit, in mem0's order."""
    decision_done: bool = False
    actions_rv: Any = None


_STATE: contextvars.ContextVar[_AddState | None] = contextvars.ContextVar("mem0_add_state", default=None)


@contextlib.contextmanager
def _never_raise(what: str) -> Iterator[None]:
    try:
        yield
    except Exception:  # tracing must never break the traced program
        logger.exception("mem0 tracing: could not record %s", what)


def _unit_value(memory_id: str, text: str, payload: dict[str, Any] | None) -> dict[str, Any]:
    return {"id": memory_id, "memory": text, "timestamp": (payload or {}).get("timestamp")}


def _record_cleaned(raw_rv: Any, cleaned: str, class_name: str) -> Any:
    """The reply without code fences: same identity as the raw reply, linked from it."""
    from smartcomment import comment_link, comment_variable

    raw_name = raw_rv.name
    clean_rv = comment_variable(
        cleaned,
        to_runtime=True,
        id_strategy=lambda _: raw_name,
        class_name=class_name,
        category="llm_response",
        comment="The reply with code fences removed.",
    )
    comment_link(source=raw_rv, target=clean_rv, comment="mem0.memory.utils.remove_code_blocks")
    return clean_rv


class Mem0Tracer:
    """Builds the patch specs that trace one `mem0.Memory` instance.

    Args:
        memory: the mem0 `Memory` instance.
        llm_model: model name recorded in op metadata.
        embedding_model: embedder name recorded in op metadata.
    """

    def __init__(self, memory: Any, *, llm_model: str, embedding_model: str) -> None:
        self.memory = memory
        self.llm_model = llm_model
        self.embedding_model = embedding_model
        self._pending_context: contextvars.Context | None = None
        self._parameters = ParameterTracer("Mem0")

    # -- public -----------------------------------------------------------------------------
    def patch_specs(self) -> list[PatchSpec]:
        """The specs to install (with `MonkeyPatcher`) around `memory.add` calls."""
        m = self.memory
        targets: list[tuple[str, Any, str, Callable[[Callable[..., Any]], Callable[..., Any]]]] = [
            ("mem0.add", m, "add", self._wrap_add),
            ("mem0._add_to_vector_store", m, "_add_to_vector_store", self._wrap_add_to_vector_store),
            ("mem0.llm.generate_response", m.llm, "generate_response", self._wrap_generate),
            ("mem0.vector_store.search", m.vector_store, "search", self._wrap_search),
            ("mem0._create_memory", m, "_create_memory", self._wrap_create),
            ("mem0._update_memory", m, "_update_memory", self._wrap_update),
            ("mem0._delete_memory", m, "_delete_memory", self._wrap_delete),
        ]
        specs = []
        for name, obj, attr, wrapper in targets:
            getter, setter = make_attr_patch(obj, attr)
            specs.append(PatchSpec(name=name, getter=getter, setter=setter, wrapper=wrapper))
        return specs

    def record_search(self, query_rv: Any, results: list[dict[str, Any]], top_k: int) -> None:
        """Record `memory_system.search_vector_store`: query -> each retrieved unit (latest version)."""
        if query_rv is None or not tracing_active():
            return
        from smartcomment import comment_op, comment_op_scope

        with (
            _never_raise("search_vector_store"),
            comment_op_scope(
                op_name="memory_system.search_vector_store",
                category="retrieval",
                comment=f"The query searches the vector store for the top-{top_k} memories.",
                metadata={"embedding_model": self.embedding_model, "top_k": top_k},
            ),
        ):
            limit = self._parameters.handles({"top_k": top_k})
            for hit in results:
                unit = _unit_value(hit["id"], hit.get("memory", ""), hit.get("metadata"))
                comment_op(
                    inputs=[query_rv, *limit],
                    outputs=[(unit, memory_unit_options(identity_only=True))],
                    comment=f"Memory '{hit['id']}' is retrieved (score {hit.get('score')}).",
                    reuse_op=True,
                )

    # -- wrappers: threading ------------------------------------------------------------------
    def _wrap_add(self, original: Callable[..., Any]) -> Callable[..., Any]:
        def add(*args: Any, **kwargs: Any) -> Any:
            self._pending_context = contextvars.copy_context()
            try:
                return original(*args, **kwargs)
            finally:
                self._pending_context = None

        return add

    def _wrap_add_to_vector_store(self, original: Callable[..., Any]) -> Callable[..., Any]:
        def add_to_vector_store(messages: Any, metadata: Any, filters: Any, infer: Any) -> Any:
            ctx = self._pending_context
            if ctx is None:
                return self._traced_add(original, messages, metadata, filters, infer)
            return ctx.run(self._traced_add, original, messages, metadata, filters, infer)

        return add_to_vector_store

    def _traced_add(
        self, original: Callable[..., Any], messages: Any, metadata: Any, filters: Any, infer: Any
    ) -> Any:
        if not tracing_active():
            return original(messages, metadata, filters, infer)
        state = _AddState(infer=bool(infer), metadata=dict(metadata or {}))
        token = _STATE.set(state)
        try:
            with state.stack:
                result = original(messages, metadata, filters, infer)
                if state.infer and not state.decision_done and state.facts_rv is not None:
                    self._record_no_decision(state)
                return result
        finally:
            _STATE.reset(token)

    # -- wrappers: LLM calls -------------------------------------------------------------------
    def _wrap_generate(self, original: Callable[..., Any]) -> Callable[..., Any]:
        def generate_response(messages: list[dict[str, Any]], *args: Any, **kwargs: Any) -> Any:
            state = _STATE.get()
            if state is None or not state.infer or not tracing_active():
                return original(messages, *args, **kwargs)
            is_extraction = bool(messages) and messages[0].get("role") == "system"
            try:
                response = original(messages, *args, **kwargs)
            except Exception as exc:
                if not is_extraction:
                    with _never_raise("update decision failure"):
                        self._record_decision(state, messages, "", error=f"({type(exc).__name__}) {exc}")
                raise
            with _never_raise("extract_facts" if is_extraction else "update_memory_decision"):
                if is_extraction:
                    self._record_extraction(state, messages, response)
                else:
                    self._record_decision(state, messages, response)
            return response

        return generate_response

    def _wrap_search(self, original: Callable[..., Any]) -> Callable[..., Any]:
        def search(*args: Any, **kwargs: Any) -> Any:
            hits = original(*args, **kwargs)
            state = _STATE.get()
            if state is not None:
                for hit in hits or []:
                    payload = dict(getattr(hit, "payload", None) or {})
                    state.search_hits.append((str(hit.id), payload.get("data", ""), payload))
            return hits

        return search

    def _raw_inputs(self) -> list[Any]:
        from smartcomment import current_context

        ctx = current_context()
        return [] if ctx is None else ctx.query_variables(name_pattern=f"^{RAW_INPUT_PREFIX}\\d+$")

    def _record_extraction(self, state: _AddState, messages: list[dict[str, Any]], response: str) -> None:
        from mem0.memory.utils import extract_json, remove_code_blocks

        from smartcomment import comment_link, comment_op_scope, comment_variable

        system_rv = comment_variable(
            messages[0].get("content", ""),
            to_runtime=True,
            id_strategy=lambda _: "fact-extraction-system-prompt",
            category="prompt",
            comment="The system prompt of mem0's fact extraction (an optimisation target).",
            metadata={"op_type": "extraction"},
        )
        with comment_op_scope(
            op_name="memory_system.extract_facts",
            category="extraction",
            comment="The LLM extracts facts from the new message.",
            metadata={"llm_model": self.llm_model},
        ):
            raw_rv = comment_variable(
                response,
                to_runtime=True,
                class_name="raw_fact_extraction_response",
                category="llm_response",
                comment="The raw reply of the fact-extraction LLM call.",
            )
            for rv in self._raw_inputs():
                comment_link(source=rv, target=raw_rv, comment="The LLM reads the message.")
            comment_link(
                source=system_rv, target=raw_rv, comment="The LLM follows the fact-extraction prompt."
            )
            cleaned = remove_code_blocks(response)
            clean_rv = _record_cleaned(raw_rv, cleaned, "fact_extraction_response_with_code_block_removing")
            raw_name = raw_rv.name
            facts: list[str] = []
            error = None
            try:
                if cleaned.strip():
                    try:
                        facts = json.loads(cleaned)["facts"]
                    except json.JSONDecodeError:
                        facts = json.loads(extract_json(cleaned))["facts"]
            except Exception as exc:  # mem0 treats every parse failure as "no facts"
                error = f"({type(exc).__name__}) {exc}"
                facts = []
            state.facts = [str(f) for f in facts] if isinstance(facts, list) else []
            state.facts_rv = comment_variable(
                state.facts,
                to_runtime=True,
                id_strategy=lambda _: raw_name,
                class_name="extracted_facts",
                category="llm_response",
                comment="The facts parsed from the reply.",
            )
            comment_link(
                source=clean_rv,
                target=state.facts_rv,
                comment=f"The LLM extracts {len(state.facts)} facts."
                + (f" Parse error: {error}" if error else ""),
                edge_metadata={"error": error} if error else None,
            )

    def _existing_memories(self, state: _AddState) -> list[dict[str, Any]]:
        # mem0 de-duplicates hits by id (first position, last value) and renumbers them 0, 1, ...
        unique: dict[str, tuple[str, dict[str, Any]]] = {}
        for mem_id, text, payload in state.search_hits:
            unique[mem_id] = (text, payload)
        return [
            {"id": mem_id, "text": text, "payload": payload} for mem_id, (text, payload) in unique.items()
        ]

    def _record_decision(
        self, state: _AddState, messages: list[dict[str, Any]], response: str, *, error: str | None = None
    ) -> None:
        from mem0.configs.prompts import DEFAULT_UPDATE_MEMORY_PROMPT
        from mem0.memory.utils import remove_code_blocks

        from smartcomment import comment_link, comment_op_scope, comment_variable

        state.decision_done = True
        template = self.memory.config.custom_update_memory_prompt or DEFAULT_UPDATE_MEMORY_PROMPT
        template_rv = comment_variable(
            template,
            to_runtime=True,
            id_strategy=lambda _: "memory-update-decision-prompt",
            category="prompt",
            comment="The update-decision prompt template of mem0 (an optimisation target).",
            metadata={"op_type": "update"},
        )
        existing = self._existing_memories(state)
        shown = [{"id": str(i), "text": e["text"]} for i, e in enumerate(existing)]
        state.stack.enter_context(
            comment_op_scope(
                op_name="memory_system.update_memory_decision",
                category="update",
                comment="The LLM decides ADD/UPDATE/DELETE/NONE for each new fact against similar memories.",
                metadata={"llm_model": self.llm_model},
            )
        )
        existing_rv = comment_variable(
            f"Find {len(shown)} existing memories similar to the new extracted facts: {json.dumps(shown, ensure_ascii=False)}",
            to_runtime=True,
            class_name="existing_memories",
            category="similar_memories",
            comment="The similar memories shown to the update decision (ids renumbered from 0).",
        )
        for e in existing:
            comment_link(
                source=(
                    _unit_value(e["id"], e["text"], e["payload"]),
                    memory_unit_options(identity_only=True),
                ),
                target=existing_rv,
                comment=f"Memory '{e['id']}' is similar to a new fact.",
            )
        instruction_rv = comment_variable(
            str(messages[-1].get("content", "")),
            to_runtime=True,
            class_name="memory_update_task_instruction",
            category="prompt",
            comment="The concrete update-decision prompt sent to the LLM.",
            metadata={"op_type": "update"},
        )
        if state.facts_rv is not None:
            comment_link(
                source=state.facts_rv, target=instruction_rv, comment="The new facts enter the prompt."
            )
        comment_link(
            source=existing_rv, target=instruction_rv, comment="The similar memories enter the prompt."
        )
        comment_link(source=template_rv, target=instruction_rv, comment="The template frames the prompt.")
        raw_rv = comment_variable(
            response,
            to_runtime=True,
            class_name="raw_memory_update_decision",
            category="llm_response",
            comment="The raw reply of the update-decision LLM call.",
        )
        comment_link(
            source=instruction_rv,
            target=raw_rv,
            comment="The LLM decides the memory updates.",
            edge_metadata={"error": error} if error else None,
        )
        cleaned = remove_code_blocks(response) if response and response.strip() else ""
        clean_rv = _record_cleaned(raw_rv, cleaned, "memory_update_decision_with_code_block_removing")
        parse_error = None
        try:
            actions = json.loads(cleaned) if cleaned else {}
        except Exception as exc:  # mem0 falls back to no actions
            parse_error = f"({type(exc).__name__}) {exc}"
            actions = {}
        state.actions_rv = comment_variable(
            actions,
            to_runtime=True,
            class_name="update_action",
            encoding_fn=json_encode,
            decoding_fn=json.loads,
            category="llm_response",
            comment="The memory update actions parsed from the reply.",
        )
        comment_link(
            source=clean_rv,
            target=state.actions_rv,
            comment="json.loads",
            edge_metadata={"error": parse_error} if parse_error else None,
        )

    def _record_no_decision(self, state: _AddState) -> None:
        from smartcomment import comment_link, comment_op_scope, comment_variable

        with (
            _never_raise("empty update decision"),
            comment_op_scope(
                op_name="memory_system.update_memory_decision",
                category="update",
                comment="No facts were extracted, so no update decision is made.",
                metadata={"llm_model": self.llm_model},
            ),
        ):
            actions_rv = comment_variable(
                {},
                to_runtime=True,
                class_name="update_action",
                encoding_fn=json_encode,
                decoding_fn=json.loads,
                category="llm_response",
                comment="An empty set of memory update actions.",
            )
            comment_link(source=state.facts_rv, target=actions_rv, comment="No facts, so no actions.")

    # -- wrappers: memory edits -----------------------------------------------------------------
    def _wrap_create(self, original: Callable[..., Any]) -> Callable[..., Any]:
        def create_memory(data: str, existing_embeddings: Any, metadata: Any = None) -> Any:
            timestamp = (metadata or {}).get("timestamp")
            memory_id = original(data, existing_embeddings, metadata)
            state = _STATE.get()
            if state is not None and tracing_active():
                with _never_raise("ADD"):
                    self._record_add(state, str(memory_id), data, timestamp)
            return memory_id

        return create_memory

    def _record_add(self, state: _AddState, memory_id: str, data: str, timestamp: Any) -> None:
        from smartcomment import comment_link, comment_op_scope

        unit = ({"id": memory_id, "memory": data, "timestamp": timestamp}, memory_unit_options())
        if state.infer and state.actions_rv is not None:
            comment_link(
                source=state.actions_rv, target=unit, comment=f"A new memory unit '{memory_id}' is added."
            )
            return
        # infer=False: the raw message is stored verbatim
        with comment_op_scope(
            op_name="memory_system.add_to_vector_store",
            category="embedding",
            comment="The message is embedded and stored verbatim (infer=False).",
            metadata={"embedding_model": self.embedding_model},
        ):
            for rv in self._raw_inputs():
                comment_link(
                    source=rv, target=unit, comment=f"The message is stored as memory '{memory_id}'."
                )

    def _wrap_update(self, original: Callable[..., Any]) -> Callable[..., Any]:
        def update_memory(memory_id: str, data: str, existing_embeddings: Any, metadata: Any = None) -> Any:
            state = _STATE.get()
            if state is None or state.actions_rv is None or not tracing_active():
                return original(memory_id, data, existing_embeddings, metadata)
            from smartcomment import comment_mutation

            before = None
            with _never_raise("UPDATE (before value)"):
                point = self.memory.vector_store.get(vector_id=memory_id)
                payload = dict(point.payload) if point is not None else {}
                before = _unit_value(str(memory_id), payload.get("data", ""), payload)
            if before is None:
                return original(memory_id, data, existing_embeddings, metadata)
            try:
                scope = comment_mutation(
                    target=before,
                    inputs=[state.actions_rv],
                    id_strategy=memory_unit_identity,
                    encoding_fn=json_encode,
                    decoding_fn=json.loads,
                    category="memory_entry",
                    comment="A unit stored in the memory layer.",
                    mutation_comment=f"Existing memory unit '{memory_id}' is updated.",
                    mutation_category="llm_response",
                    reuse_op=True,
                )
                scope.__enter__()
            except Exception:
                logger.exception("mem0 tracing: could not open the UPDATE mutation of %s", memory_id)
                return original(memory_id, data, existing_embeddings, metadata)
            try:
                result = original(memory_id, data, existing_embeddings, metadata)
            except BaseException as exc:
                scope.__exit__(type(exc), exc, exc.__traceback__)
                raise
            before["memory"] = data
            before["timestamp"] = (metadata or {}).get("timestamp")
            with _never_raise("UPDATE"):
                scope.__exit__(None, None, None)
            return result

        return update_memory

    def _wrap_delete(self, original: Callable[..., Any]) -> Callable[..., Any]:
        def delete_memory(memory_id: str) -> Any:
            state = _STATE.get()
            unit = None
            if state is not None and state.actions_rv is not None and tracing_active():
                with _never_raise("DELETE (before value)"):
                    point = self.memory.vector_store.get(vector_id=memory_id)
                    payload = dict(point.payload) if point is not None else {}
                    unit = _unit_value(str(memory_id), payload.get("data", ""), payload)
            result = original(memory_id)
            if unit is not None:
                from smartcomment import comment_link, comment_variable

                with _never_raise("DELETE"):
                    marker = comment_variable(
                        DELETE_MARKER,
                        to_runtime=True,
                        class_name="delete_marker",
                        category="marker",
                        comment="The memory unit is deleted.",
                    )
                    comment_link(
                        source=(unit, memory_unit_options(identity_only=True)),
                        target=marker,
                        comment=f"The memory unit '{memory_id}' is deleted.",
                    )
            return result

        return delete_memory
