"""Tracing of mem0ai 2.x (the additive "v3" pipeline) from the outside, with monkey-patch specs.

mem0 2.x's `Memory._add_to_vector_store` runs its whole pipeline in one function, in the caller's
thread. We wrap the instance attributes it calls (never module globals, so concurrent layers
never see each other's wrappers) for the duration of one `add`; each wrapper records after the
wrapped call returned:

| wrapped | op (category) | records |
| --- | --- | --- |
| `memory._add_to_vector_store` | | opens per-call state; records the pending embedding/dedup ops at the end |
| `memory.db.get_last_messages` | `memory_system.recent_messages` (extraction) | `recent_messages` (the earlier message ids in its metadata, not linked) |
| `memory.vector_store.search` | `memory_system.search_existing_memories` (extraction) | existing units -> `existing_memories` (ids as shown to the LLM) |
| `memory.llm.generate_response` | `memory_system.extract_memories` (extraction) | message, recent messages, existing memories, `extraction-custom-instructions` -> `additive_extraction_task_instruction`; it and `additive-extraction-system-prompt` -> `raw_additive_extraction_response` |
| (same call) | `memory_system.parse_extraction` (extraction) | raw -> cleaned reply -> `extracted_memories` |
| `memory.embedding_model.embed_batch` / `embed` | `memory_system.embed_memories` (embedding) | `extracted_memories` -> `embedded_memories` |
| (recomputed) | `memory_system.hash_dedup` (update) | `embedded_memories`, `existing_memories` -> `deduplicated_memories`; skipped texts in op metadata |
| `memory.vector_store.insert` | `memory_system.insert_memories` (update) | `deduplicated_memories` -> `memory-unit-<id>` v1 |
| `memory.entity_store.insert` / `update` | `memory_system.link_entities` (update) | each new unit -> `entity-<text>` |

Search is traced by `mem0v3_search_tracing.Mem0v3SearchTracer`.

Cleaned replies are recomputed with mem0's own `remove_code_blocks` / `extract_json`, hashes with
the md5 mem0 uses. Nothing here raises into mem0: a recording failure is logged and the host call
proceeds.
"""

from __future__ import annotations

import contextlib
import contextvars
import hashlib
import json
import logging
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

from membase.layers.mem0_tracing import RAW_INPUT_PREFIX
from membase.layers.tracing import json_encode, memory_unit_options, tracing_active
from membase.utils.patching import PatchSpec, make_attr_patch

__all__ = [
    "CUSTOM_INSTRUCTIONS_VARIABLE",
    "SYSTEM_PROMPT_VARIABLE",
    "Mem0v3Tracer",
    "attr_patch_specs",
    "list_variable",
    "never_raise",
    "unit_ref",
]

logger = logging.getLogger(__name__)

CUSTOM_INSTRUCTIONS_VARIABLE = "extraction-custom-instructions"
"""Graph variable of `custom_instructions` (the optimizer's target for this layer)."""
SYSTEM_PROMPT_VARIABLE = "additive-extraction-system-prompt"
_MAX_REMEMBERED_MESSAGES = 64


@dataclass(kw_only=True)
class _AddState:
    """Per `_add_to_vector_store` call."""

    infer: bool
    metadata: dict[str, Any]
    existing: list[dict[str, Any]] = field(default_factory=list)
    """`{"id", "text", "payload"}` of each existing memory mem0 found, in its order."""
    existing_rv: Any = None
    recent_rv: Any = None
    extracted: list[str] = field(default_factory=list)
    extracted_rv: Any = None
    embedded: list[str] = field(default_factory=list)
    dedup_rv: Any = None
    dedup_done: bool = False
    inserted: list[tuple[str, str]] = field(default_factory=list)
    """`(memory id, text)` of every stored unit, in mem0's order."""


_STATE: contextvars.ContextVar[_AddState | None] = contextvars.ContextVar("mem0v3_add_state", default=None)


@contextlib.contextmanager
def never_raise(what: str) -> Iterator[None]:
    """Log, never raise, any exception of the block: tracing must not break the traced program."""
    try:
        yield
    except Exception:  # tracing must never break the traced program
        logger.exception("mem0v3 tracing: could not record %s", what)


def _unit_value(memory_id: str, text: str, payload: dict[str, Any] | None) -> dict[str, Any]:
    return {"id": memory_id, "memory": text, "timestamp": (payload or {}).get("timestamp")}


def unit_ref(memory_id: str, text: str, payload: dict[str, Any] | None) -> tuple[dict[str, Any], dict[str, Any]]:
    """The latest version of a unit, by identity (no new version)."""
    return _unit_value(memory_id, text, payload), memory_unit_options(identity_only=True)


def list_variable(value: Any, class_name: str, category: str, comment: str) -> Any:
    """Record ``value`` as one JSON-encoded runtime variable of the current graph."""
    from smartcomment import comment_variable

    return comment_variable(
        value,
        to_runtime=True,
        class_name=class_name,
        encoding_fn=json_encode,
        decoding_fn=json.loads,
        category=category,
        comment=comment,
    )


def _parse_extraction(cleaned: str) -> tuple[list[str], str | None]:
    """mem0's parse of the cleaned reply: `(memory texts, error)`."""
    from mem0.memory.utils import extract_json

    if not cleaned or not cleaned.strip():
        return [], None
    try:
        try:
            items = json.loads(cleaned, strict=False).get("memory", [])
        except json.JSONDecodeError:
            items = json.loads(extract_json(cleaned), strict=False).get("memory", [])
    except Exception as exc:  # mem0 treats every parse failure as "nothing extracted"
        return [], f"({type(exc).__name__}) {exc}"
    texts = [str(m.get("text")) for m in items if isinstance(m, dict) and m.get("text")]
    return texts, None


Wrapper = Callable[[Callable[..., Any]], Callable[..., Any]]


def attr_patch_specs(targets: list[tuple[str, Any, str, Wrapper]]) -> list[PatchSpec]:
    """`PatchSpec`s for `(label, object, attribute, wrapper)` tuples."""
    specs = []
    for name, obj, attr, wrapper in targets:
        getter, setter = make_attr_patch(obj, attr)
        specs.append(PatchSpec(name=name, getter=getter, setter=setter, wrapper=wrapper))
    return specs


def _md5(text: str) -> str:
    return hashlib.md5(text.encode()).hexdigest()  # mem0's content hash, not a security use


class Mem0v3Tracer:
    """Builds the patch specs that trace one mem0ai 2.x `Memory` instance.

    Args:
        memory: the mem0 `Memory` instance.
        llm_model: model name recorded in op metadata.
        embedding_model: embedder name recorded in op metadata.
    """

    def __init__(self, memory: Any, *, llm_model: str, embedding_model: str) -> None:
        self.memory = memory
        self.llm_model = llm_model
        self.embedding_model = embedding_model
        self._message_ids: dict[str, str] = {}
        """message content as mem0 stores it -> message node name (to link recent messages)."""

    # -- public -----------------------------------------------------------------------------
    def patch_specs(self) -> list[PatchSpec]:
        """The specs to install (with `MonkeyPatcher`) around `memory.add` calls."""
        m = self.memory
        entity_store = m.entity_store  # mem0 creates it lazily, mid-add; create it now to wrap it
        return attr_patch_specs(
            [
                ("mem0v3._add_to_vector_store", m, "_add_to_vector_store", self._wrap_add_to_vector_store),
                ("mem0v3.db.get_last_messages", m.db, "get_last_messages", self._wrap_last_messages),
                ("mem0v3.vector_store.search", m.vector_store, "search", self._wrap_existing_search),
                ("mem0v3.llm.generate_response", m.llm, "generate_response", self._wrap_generate),
                ("mem0v3.embedding_model.embed_batch", m.embedding_model, "embed_batch", self._wrap_embed_batch),
                ("mem0v3.embedding_model.embed", m.embedding_model, "embed", self._wrap_embed),
                ("mem0v3.vector_store.insert", m.vector_store, "insert", self._wrap_insert),
                ("mem0v3.entity_store.insert", entity_store, "insert", self._wrap_entity_write("insert")),
                ("mem0v3.entity_store.update", entity_store, "update", self._wrap_entity_write("update")),
            ]
        )

    # -- ingestion: per-call state ----------------------------------------------------------------
    def _wrap_add_to_vector_store(self, original: Callable[..., Any]) -> Callable[..., Any]:
        def add_to_vector_store(messages: Any, metadata: Any, filters: Any, infer: Any, *args: Any, **kwargs: Any) -> Any:
            if not tracing_active():
                return original(messages, metadata, filters, infer, *args, **kwargs)
            state = _AddState(infer=bool(infer), metadata=dict(metadata or {}))
            token = _STATE.set(state)
            try:
                result = original(messages, metadata, filters, infer, *args, **kwargs)
                with never_raise("embedding and hash dedup"):
                    self._record_dedup(state)
                return result
            finally:
                _STATE.reset(token)
                self._remember_messages()

        return add_to_vector_store

    def _raw_inputs(self) -> list[Any]:
        from smartcomment import current_context

        ctx = current_context()
        return [] if ctx is None else ctx.query_variables(name_pattern=f"^{RAW_INPUT_PREFIX}\\d+$")

    def _remember_messages(self) -> None:
        with never_raise("message index"):
            for rv in self._raw_inputs():
                value = json.loads(rv.value) if isinstance(rv.value, str) else rv.value
                content = value.get("content") if isinstance(value, dict) else None
                if content:
                    self._message_ids[content] = rv.name
            while len(self._message_ids) > _MAX_REMEMBERED_MESSAGES:
                self._message_ids.pop(next(iter(self._message_ids)))

    # -- ingestion: context -----------------------------------------------------------------------
    def _wrap_last_messages(self, original: Callable[..., Any]) -> Callable[..., Any]:
        def get_last_messages(*args: Any, **kwargs: Any) -> Any:
            rows = original(*args, **kwargs)
            state = _STATE.get()
            if state is not None and tracing_active():
                with never_raise("recent_messages"):
                    self._record_recent(state, list(rows or []))
            return rows

        return get_last_messages

    def _record_recent(self, state: _AddState, rows: list[dict[str, Any]]) -> None:
        from smartcomment import comment_op_scope, comment_variable

        shown = [{"role": r.get("role"), "name": r.get("name"), "content": r.get("content")} for r in rows]
        # The earlier messages are named, not linked: the prompt extracts from the new message only,
        # and a lineage edge would make every later extraction call a place where their facts "drop".
        earlier = [self._message_ids.get(str(row.get("content"))) for row in shown]
        with comment_op_scope(
            op_name="memory_system.recent_messages",
            category="extraction",
            comment="mem0 reads the latest messages of this scope as the extraction's conversation context.",
            metadata={"limit": 10, "message_ids": earlier},
        ):
            state.recent_rv = comment_variable(
                shown,
                to_runtime=True,
                class_name="recent_messages",
                encoding_fn=json_encode,
                decoding_fn=json.loads,
                category="message_context",
                comment="The recent messages shown to the extraction LLM (context, not extracted from).",
                metadata={"message_ids": earlier},
            )

    def _wrap_existing_search(self, original: Callable[..., Any]) -> Callable[..., Any]:
        def search(*args: Any, **kwargs: Any) -> Any:
            hits = original(*args, **kwargs)
            state = _STATE.get()
            if state is not None and state.existing_rv is None and tracing_active():
                with never_raise("search_existing_memories"):
                    self._record_existing(state, list(hits or []))
            return hits

        return search

    def _record_existing(self, state: _AddState, hits: list[Any]) -> None:
        from smartcomment import comment_link, comment_op_scope

        for hit in hits:
            payload = dict(getattr(hit, "payload", None) or {})
            state.existing.append({"id": str(hit.id), "text": payload.get("data", ""), "payload": payload})
        shown = [
            {"id": str(i), "memory_id": e["id"], "text": e["text"], "score": getattr(h, "score", None)}
            for i, (e, h) in enumerate(zip(state.existing, hits, strict=True))
        ]
        with comment_op_scope(
            op_name="memory_system.search_existing_memories",
            category="extraction",
            comment="The new message searches the store for the existing memories the extraction LLM sees.",
            metadata={"top_k": 10, "embedding_model": self.embedding_model},
        ):
            state.existing_rv = list_variable(
                shown,
                "existing_memories",
                "similar_memories",
                "The existing memories shown to the extraction LLM (ids renumbered from 0).",
            )
            for e in state.existing:
                comment_link(
                    source=unit_ref(e["id"], e["text"], e["payload"]),
                    target=state.existing_rv,
                    comment=f"Memory '{e['id']}' is similar to the new message.",
                )

    # -- ingestion: the extraction call ------------------------------------------------------------
    def _wrap_generate(self, original: Callable[..., Any]) -> Callable[..., Any]:
        def generate_response(*args: Any, **kwargs: Any) -> Any:
            state = _STATE.get()
            if state is None or not state.infer or not tracing_active():
                return original(*args, **kwargs)
            messages = kwargs.get("messages", args[0] if args else [])
            try:
                response = original(*args, **kwargs)
            except Exception as exc:
                with never_raise("failed extract_memories"):
                    self._record_extraction(state, messages, "", error=f"({type(exc).__name__}) {exc}")
                raise
            with never_raise("extract_memories"):
                self._record_extraction(state, messages, response)
            return response

        return generate_response

    def _record_extraction(
        self, state: _AddState, messages: list[dict[str, Any]], response: Any, *, error: str | None = None
    ) -> None:
        from smartcomment import comment_link, comment_op_scope, comment_variable

        system = str(messages[0].get("content", "")) if messages else ""
        system_rv = comment_variable(
            system,
            to_runtime=True,
            id_strategy=lambda _: SYSTEM_PROMPT_VARIABLE,
            category="prompt",
            comment="mem0's additive extraction system prompt (fixed by mem0 2.x).",
            metadata={"op_type": "extraction"},
        )
        custom_rv = comment_variable(
            self.memory.config.custom_instructions or "",
            to_runtime=True,
            id_strategy=lambda _: CUSTOM_INSTRUCTIONS_VARIABLE,
            category="prompt",
            comment="custom_instructions appended to the extraction prompt (an optimisation target).",
            metadata={"op_type": "extraction"},
        )
        shown = [{k: e[k] for k in ("id", "text")} | {"memory_id": e["id"]} for e in state.existing]
        with comment_op_scope(
            op_name="memory_system.extract_memories",
            category="extraction",
            comment="One LLM call writes the new memories (ADD only) from the message, its context and the "
            "existing memories; a fact it judges already known is left out.",
            metadata={"llm_model": self.llm_model, "existing_memories": shown},
        ):
            instruction_rv = comment_variable(
                str(messages[-1].get("content", "")) if messages else "",
                to_runtime=True,
                class_name="additive_extraction_task_instruction",
                category="prompt",
                comment="The concrete extraction prompt sent to the LLM.",
                metadata={"op_type": "extraction"},
            )
            for rv in self._raw_inputs():
                comment_link(source=rv, target=instruction_rv, comment="The new message enters the prompt.")
            for rv, what in ((state.recent_rv, "The recent messages"), (state.existing_rv, "The existing memories")):
                if rv is not None:
                    comment_link(source=rv, target=instruction_rv, comment=f"{what} enter the prompt.")
            comment_link(source=custom_rv, target=instruction_rv, comment="The custom instructions enter the prompt.")
            raw_rv = comment_variable(
                response if isinstance(response, str) else str(response),
                to_runtime=True,
                class_name="raw_additive_extraction_response",
                category="llm_response",
                comment="The raw reply of the extraction LLM call.",
            )
            comment_link(
                source=instruction_rv,
                target=raw_rv,
                comment="The LLM writes the new memories.",
                edge_metadata={"error": error} if error else None,
            )
            comment_link(source=system_rv, target=raw_rv, comment="The LLM follows the extraction system prompt.")
        if error is None:
            self._record_parse(state, raw_rv, response if isinstance(response, str) else str(response))

    def _record_parse(self, state: _AddState, raw_rv: Any, response: str) -> None:
        from mem0.memory.utils import remove_code_blocks

        from smartcomment import comment_link, comment_op_scope, comment_variable

        with comment_op_scope(
            op_name="memory_system.parse_extraction",
            category="extraction",
            comment="mem0 strips code fences and reads the reply's \"memory\" list.",
        ):
            cleaned = remove_code_blocks(response)
            raw_name = raw_rv.name
            clean_rv = comment_variable(
                cleaned,
                to_runtime=True,
                id_strategy=lambda _: raw_name,
                class_name="additive_extraction_response_with_code_block_removing",
                category="llm_response",
                comment="The reply with code fences removed.",
            )
            comment_link(source=raw_rv, target=clean_rv, comment="mem0.memory.utils.remove_code_blocks")
            state.extracted, error = _parse_extraction(cleaned)
            state.extracted_rv = list_variable(
                state.extracted, "extracted_memories", "llm_response", "The memory texts parsed from the reply."
            )
            comment_link(
                source=clean_rv,
                target=state.extracted_rv,
                comment=f"{len(state.extracted)} memories parsed." + (f" Parse error: {error}" if error else ""),
                edge_metadata={"error": error} if error else None,
            )

    # -- ingestion: embedding, dedup, insert, entities ---------------------------------------------
    def _wrap_embed_batch(self, original: Callable[..., Any]) -> Callable[..., Any]:
        def embed_batch(texts: Any, memory_action: Any = "add", *args: Any, **kwargs: Any) -> Any:
            vectors = original(texts, memory_action, *args, **kwargs)
            state = _STATE.get()
            if state is not None and memory_action == "add" and not state.dedup_done:
                state.embedded.extend(str(t) for t in texts)
            return vectors

        return embed_batch

    def _wrap_embed(self, original: Callable[..., Any]) -> Callable[..., Any]:
        def embed(text: Any, memory_action: Any = None, *args: Any, **kwargs: Any) -> Any:
            vector = original(text, memory_action, *args, **kwargs)
            state = _STATE.get()
            # mem0 falls back to one call per text when the batch call fails
            if state is not None and memory_action == "add" and state.extracted and not state.dedup_done:
                state.embedded.append(str(text))
            return vector

        return embed

    def _record_dedup(self, state: _AddState) -> None:
        """The embedding op and the hash dedup op (once per add, before the first insert)."""
        if state.dedup_done or state.extracted_rv is None or not state.extracted:
            return
        state.dedup_done = True
        from smartcomment import comment_link, comment_op_scope

        embedded = [t for t in dict.fromkeys(state.embedded) if t in state.extracted]
        with comment_op_scope(
            op_name="memory_system.embed_memories",
            category="embedding",
            comment="The new memory texts are embedded (a text whose embedding fails is left out).",
            metadata={"embedding_model": self.embedding_model},
        ):
            embedded_rv = list_variable(embedded, "embedded_memories", "llm_response", "The texts that got a vector.")
            comment_link(source=state.extracted_rv, target=embedded_rv, comment=f"{len(embedded)} texts embedded.")
        existing_hashes = {e["payload"].get("hash"): e["id"] for e in state.existing if e["payload"].get("hash")}
        kept: list[str] = []
        skipped: list[dict[str, Any]] = []
        seen: set[str] = set()
        for text in (t for t in state.extracted if t in embedded):
            digest = _md5(text)
            if digest in existing_hashes:
                skipped.append({"text": text, "reason": "existing_memory_has_same_hash", "memory_id": existing_hashes[digest]})
            elif digest in seen:
                skipped.append({"text": text, "reason": "repeated_in_this_reply"})
            else:
                seen.add(digest)
                kept.append(text)
        with comment_op_scope(
            op_name="memory_system.hash_dedup",
            category="update",
            comment="A new text whose md5 an existing memory (or an earlier text of this reply) has is dropped.",
            metadata={"skipped": skipped},
        ):
            state.dedup_rv = list_variable(kept, "deduplicated_memories", "llm_response", "The texts mem0 stores.")
            comment_link(source=embedded_rv, target=state.dedup_rv, comment=f"{len(skipped)} texts dropped as duplicates.")
            if state.existing_rv is not None:
                comment_link(source=state.existing_rv, target=state.dedup_rv, comment="Their hashes are compared.")

    def _wrap_insert(self, original: Callable[..., Any]) -> Callable[..., Any]:
        def insert(*args: Any, **kwargs: Any) -> Any:
            result = original(*args, **kwargs)
            state = _STATE.get()
            if state is not None and tracing_active():
                with never_raise("insert_memories"):
                    ids = list(kwargs.get("ids") or (args[2] if len(args) > 2 else []))
                    payloads = list(kwargs.get("payloads") or (args[1] if len(args) > 1 else []))
                    self._record_insert(state, [str(i) for i in ids], payloads)
            return result

        return insert

    def _record_insert(self, state: _AddState, ids: list[str], payloads: list[dict[str, Any]]) -> None:
        from smartcomment import comment_link, comment_op_scope

        self._record_dedup(state)
        sources = [state.dedup_rv] if state.infer and state.dedup_rv is not None else self._raw_inputs()
        infer = state.infer and state.dedup_rv is not None
        with comment_op_scope(
            op_name="memory_system.insert_memories" if infer else "memory_system.add_to_vector_store",
            category="update" if infer else "embedding",
            comment="The new memories are stored (ADD)." if infer else "The message is stored verbatim (infer=False).",
            metadata={"embedding_model": self.embedding_model},
        ):
            for memory_id, payload in zip(ids, payloads, strict=False):
                text = str((payload or {}).get("data", ""))
                state.inserted.append((memory_id, text))
                unit = (_unit_value(memory_id, text, payload), memory_unit_options())
                for source in sources:
                    comment_link(source=source, target=unit, comment=f"A new memory unit '{memory_id}' is added.")

    def _wrap_entity_write(self, kind: str) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
        def wrap(original: Callable[..., Any]) -> Callable[..., Any]:
            def write(*args: Any, **kwargs: Any) -> Any:
                result = original(*args, **kwargs)
                state = _STATE.get()
                if state is not None and state.inserted and tracing_active():
                    with never_raise("link_entities"):
                        payloads = kwargs.get("payloads") if kind == "insert" else [kwargs.get("payload")]
                        self._record_entities(state, [p for p in payloads or [] if isinstance(p, dict)])
                return result

            return write

        return wrap

    def _record_entities(self, state: _AddState, payloads: list[dict[str, Any]]) -> None:
        """Links from this add's new units to the entities the entity store now says they name."""
        from smartcomment import comment_link, comment_op_scope

        units = dict(state.inserted)
        with comment_op_scope(
            op_name="memory_system.link_entities",
            category="update",
            comment="Entities named in the new memories are linked to them (used to boost search).",
        ):
            for payload in payloads:
                key = " ".join(str(payload.get("data", "")).lower().split())
                entity = (
                    {"text": key, "entity_type": payload.get("entity_type")},
                    {
                        "id_strategy": lambda _v, k=key: f"entity-{k}",
                        "encoding_fn": json_encode,
                        "decoding_fn": json.loads,
                        "category": "entity",
                        "comment": "An entity of the entity store.",
                    },
                )
                for memory_id in payload.get("linked_memory_ids") or []:
                    if str(memory_id) in units:
                        comment_link(
                            source=unit_ref(str(memory_id), units[str(memory_id)], state.metadata),
                            target=entity,
                            comment=f"Memory '{memory_id}' names '{key}'.",
                        )
