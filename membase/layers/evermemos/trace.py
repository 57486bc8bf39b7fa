"""Turn EverMemOS pipeline records into smartcomment operations (op names of spec §4.6).

Construction (per message, in order):
  `memory_system.message_buffer_update` (update)  message-buffer@v -> @v+1, message -> @v+1
  `evermemos.boundary_detection` (boundary_detection)  force split / no-split op, or the LLM scope:
      buffer -> new_messages, history_messages (`split_message_buffer`); (history, new) -> time_gap;
      (history, new, time_gap, template) -> prompt; prompt -> raw reply per attempt; raw -> result;
      then (buffer, result) -> temporary memcell, or result -> no_split_marker
  `memory_system.finalize_memory_unit` (initialization)  temporary memcell -> memory-unit-<event_id>@1
  `memory_system.extract_memory` (extraction)  per stage: (unit, template[, instructions]) -> prompt
      -> raw -> parsed value; mutation unit@k -> @k+1 + parsed -> @k+1 (`mutation`); last version
      drops `original_data`; a failed stage: prompt -> failed_marker
  `memory_system.message_buffer_update` (update)  the buffer reset (version edge only)
Retrieval: `memory_system.hybrid_retrieval` / `bm25_retrieval` / `embedding_retrieval`, or the
agentic scopes `agentic_round1_bundle`, `agentic_round2_bundle`, `agentic_final_rerank`.

List nodes use content identities (`sparse_retrieval_results:list:<sha1>` ...), so equal lists share
a node; read per-query structure through each op's subgraph. Recording never raises into the layer.
"""

from __future__ import annotations

import contextlib
import inspect
import json
import logging
from collections.abc import Iterator
from typing import Any

from membase.layers.evermemos.boundary import parse_boundary_reply
from membase.layers.evermemos.extraction import (
    parse_episode_reply,
    parse_event_log_reply,
    parse_foresight_reply,
)
from membase.layers.evermemos.manager import IngestRecord, MemcellRecord
from membase.layers.evermemos.memcell import retrieval_projection
from membase.layers.evermemos.prompts import (
    BOUNDARY_DETECTION_PROMPT,
    EPISODE_CUSTOM_INSTRUCTIONS,
    EPISODE_EXTRACTION_PROMPT,
    EVENT_LOG_PROMPT,
    FORESIGHT_PROMPT,
    MULTI_QUERY_PROMPT,
    REFINED_QUERY_PROMPT,
    SUFFICIENCY_CHECK_PROMPT,
)
from membase.layers.evermemos.retrieval import (
    AgenticRun,
    HybridRun,
    format_documents,
    parse_multi_query_reply,
    parse_sufficiency_reply,
)
from membase.layers.parameters import ParameterTracer
from membase.layers.tracing import json_encode, tracing_active

__all__ = ["EverMemOSTracer", "unit_identity"]

logger = logging.getLogger(__name__)

_STAGE_NODES = {
    # kind: (template node, template (read when recording: it may be overridden), prompt class, raw class,
    # parsed class, parser)
    "episode": (
        "episode-extraction-prompt-template",
        EPISODE_EXTRACTION_PROMPT,
        "episode_extraction_prompt",
        "raw_episode_extraction_response",
        "episode_memory",
        parse_episode_reply,
    ),
    "event_log": (
        "event-log-prompt-template",
        EVENT_LOG_PROMPT,
        "event_extraction_prompt",
        "raw_event_log_extraction_response",
        "event_log",
        parse_event_log_reply,
    ),
    "foresight": (
        "foresight-generation-prompt-template",
        FORESIGHT_PROMPT,
        "foresight_generation_prompt",
        "raw_foresight_generation_response",
        "foresight_list",
        parse_foresight_reply,
    ),
}
_OP_TYPES = {
    "episode": "episode_extraction",
    "event_log": "event_log_extraction",
    "foresight": "foresight_generation",
}


def unit_identity(value: dict[str, Any]) -> str:
    """Identity `memory-unit-<event_id>` of an EverMemOS memory-unit dict."""
    if not isinstance(value, dict):
        raise TypeError(f"EverMemOS memory unit must be a dict, got {type(value).__name__}")
    if "event_id" not in value:
        raise ValueError(f"EverMemOS memory unit has no 'event_id': {sorted(value)!r}")
    return f"memory-unit-{value['event_id']}"


def _unit_opts(**extra: Any) -> dict[str, Any]:
    return {
        "id_strategy": unit_identity,
        "encoding_fn": json_encode,
        "decoding_fn": json.loads,
        "category": "memory_entry",
        "comment": "An EverMemOS memory unit (one memcell).",
        **extra,
    }


def _source(fn: Any) -> str:
    try:
        return inspect.getsource(fn)
    except (OSError, TypeError):
        return getattr(fn, "__qualname__", repr(fn))


@contextlib.contextmanager
def _never_raise(what: str) -> Iterator[None]:
    try:
        yield
    except Exception:  # tracing must never break the traced program
        logger.exception("EverMemOS tracing: could not record %s", what)


def _named(value: Any, name: str, category: str | None = None, **kw: Any) -> Any:
    from smartcomment import comment_variable

    return comment_variable(
        value, to_runtime=True, id_strategy=lambda _: name, category=category or "prompt", **kw
    )


def _node(value: Any, class_name: str, category: str | None = None, **kw: Any) -> Any:
    from smartcomment import comment_variable

    return comment_variable(
        value, to_runtime=True, class_name=class_name, category=category or class_name, **kw
    )


def _ranked_value(ranked: list[tuple[dict[str, Any], float]]) -> list[dict[str, Any]]:
    return [retrieval_projection(doc, score) for doc, score in ranked]


class EverMemOSTracer:
    """Records EverMemOS ingestion and retrieval records into the active graph."""

    def __init__(self, *, llm_model: str, embedding_model: str, foresight: bool, event_log: bool) -> None:
        self.llm_model = llm_model
        self.embedding_model = embedding_model
        self.foresight = foresight
        self.event_log = event_log
        self._parameters = ParameterTracer("EverMemOS")

    # -- construction ----------------------------------------------------------------------------
    def _buffer_rv(self, buffer: list[dict[str, Any]]) -> Any:
        return _named(
            list(buffer),
            "message-buffer",
            "message_buffer",
            encoding_fn=json_encode,
            decoding_fn=json.loads,
            comment="The buffer of messages not yet closed into a memcell.",
        )

    def _buffer_mutation(
        self,
        before: list[dict[str, Any]],
        after: list[dict[str, Any]],
        inputs: list[Any],
        metadata: dict[str, Any] | None,
        comment: str,
    ) -> None:
        from smartcomment import comment_mutation

        target = list(before)
        with comment_mutation(
            target=target,
            inputs=inputs,
            id_strategy=lambda _: "message-buffer",
            encoding_fn=json_encode,
            decoding_fn=json.loads,
            category="message_buffer",
            comment="The buffer of messages not yet closed into a memcell.",
            mutation_name="memory_system.message_buffer_update",
            mutation_category="update",
            mutation_comment=comment,
            mutation_metadata=metadata,
        ):
            target[:] = after

    def record_ingest(self, record: IngestRecord, message_rv: Any) -> None:
        """Record one `add_message` of the manager (call after the message node was traced)."""
        if not tracing_active():
            return
        with _never_raise("message buffer update"):
            self._buffer_mutation(
                record.buffer_before,
                record.buffer_after_append,
                [message_rv] if message_rv is not None else [],
                None,
                "The new message is appended to the buffer.",
            )
        if len(record.buffer_after_append) < 2:
            return
        temp_rv = None
        with _never_raise("boundary detection"):
            temp_rv = self._record_boundary(record)
        if record.memcell is not None:
            with _never_raise("memcell"):
                self._record_memcell(record.memcell, source_rv=temp_rv)
        if record.buffer_after_reset is not None:
            with _never_raise("buffer reset"):
                self._buffer_mutation(
                    record.buffer_after_append,
                    record.buffer_after_reset,
                    [],
                    {"smart_mask_flag": record.smart_mask_flag},
                    "The buffer is reset after the memcell was stored.",
                )

    def record_flush(self, record: IngestRecord | None) -> None:
        """Record the manager's `flush`."""
        if record is None or record.memcell is None or not tracing_active():
            return
        with _never_raise("flush memcell"):
            self._record_memcell(record.memcell, source_rv=self._buffer_rv(record.buffer_before))
        with _never_raise("flush reset"):
            self._buffer_mutation(
                record.buffer_before, [], [], {"flush": True}, "The buffer is emptied at the end."
            )

    def _temporary_memcell(self, record: MemcellRecord) -> Any:
        value: dict[str, Any] = {
            "original_data": record.memcell.original_data,
            "timestamp": record.unit_v1["timestamp"],
        }
        if record.source != "force_split":
            value["summary"] = record.unit_v1["summary"]
        return _node(
            value,
            "temporary_variable",
            encoding_fn=json_encode,
            decoding_fn=json.loads,
            comment="The closed conversation segment before it becomes a memory unit.",
        )

    def _record_boundary(self, record: IngestRecord) -> Any:
        from smartcomment import comment_link, comment_op, comment_op_scope

        buffer_rv = self._buffer_rv(record.buffer_after_append)
        limit = record.hard_limit
        limit_meta = (
            {}
            if limit is None
            else {
                "trigger_type": limit.trigger_type,
                "total_tokens": limit.total_tokens,
                "total_messages": limit.total_messages,
                "hard_token_limit": limit.hard_token_limit,
                "hard_message_limit": limit.hard_message_limit,
            }
        )
        if record.force_split and record.memcell is not None:
            temp_rv = self._temporary_memcell(record.memcell)
            comment_op(
                inputs=[buffer_rv],
                outputs=[temp_rv],
                op_name="evermemos.boundary_detection",
                category="boundary_detection",
                metadata=limit_meta,
                comment="A hard limit forces the history to close into a memcell (no LLM call).",
            )
            return temp_rv
        if record.limit_without_split:
            marker = _node("NO_SPLIT", "no_split_marker", "marker", comment="No boundary was found.")
            comment_op(
                inputs=[buffer_rv],
                outputs=[marker],
                op_name="evermemos.boundary_detection",
                category="boundary_detection",
                metadata=limit_meta,
                comment="A hard limit is reached but the history is too short to split.",
            )
        decision = record.decision
        if decision is None:
            return None
        temp_rv = None
        with comment_op_scope(
            op_name="evermemos.boundary_detection",
            category="boundary_detection",
            comment="The LLM judge decides whether the new message closes the episode.",
            metadata={"smart_mask_flag": record.smart_mask_flag, "llm_model": self.llm_model},
        ):
            new_rv = _node(list(decision.new_messages), "new_messages")
            history_rv = _node(list(decision.shown_history), "history_messages")
            comment_op(
                inputs=[buffer_rv],
                outputs=[new_rv],
                category="split_message_buffer",
                reuse_op=True,
                comment="The newest message is the candidate for a new episode.",
            )
            comment_op(
                inputs=[buffer_rv],
                outputs=[history_rv],
                category="split_message_buffer",
                reuse_op=True,
                comment="The earlier messages shown to the judge.",
            )
            gap_rv = _node(decision.time_gap, "time_gap")
            comment_op(
                inputs=[history_rv, new_rv],
                outputs=[gap_rv],
                reuse_op=True,
                comment="The pause between the last shown message and the new one.",
            )
            if decision.prompt is None:
                result_source = gap_rv
            else:
                template_rv = _named(
                    BOUNDARY_DETECTION_PROMPT.template,
                    "boundary-detection-prompt-template",
                    metadata={"op_type": "boundary_detection"},
                    comment="The boundary-detection prompt template (an optimisation target).",
                )
                prompt_rv = _node(decision.prompt, "boundary_detection_prompt", "prompt")
                comment_op(
                    inputs=[history_rv, new_rv, gap_rv, template_rv],
                    outputs=[prompt_rv],
                    reuse_op=True,
                    comment="The boundary prompt is assembled.",
                )
                result_source = prompt_rv
                for attempt in decision.attempts:
                    if attempt.response is None:
                        continue
                    raw_rv = _node(attempt.response, "raw_boundary_detection_response", "llm_response")
                    comment_link(
                        source=prompt_rv,
                        target=raw_rv,
                        category="boundary_detection",
                        comment="The LLM judges the boundary.",
                    )
                    result_source = raw_rv
            result_rv = _node(
                decision.result,
                "boundary_detection_result",
                "llm_response",
                comment="The parsed boundary verdict.",
            )
            edge_meta = (
                {"error": "; ".join(a.error or "unparseable reply" for a in decision.attempts)}
                if decision.fallback
                else {"source_code": _source(parse_boundary_reply)}
            )
            comment_link(
                source=result_source,
                target=result_rv,
                category="boundary_detection",
                comment="The reply is parsed (fallback: no boundary)."
                if decision.fallback
                else "The reply is parsed.",
                edge_metadata=edge_meta,
            )
            if decision.result.should_end and record.memcell is not None:
                temp_rv = self._temporary_memcell(record.memcell)
                comment_op(
                    inputs=[buffer_rv, result_rv],
                    outputs=[temp_rv],
                    reuse_op=True,
                    comment="The history is closed into a memcell.",
                )
            else:
                marker = _node("NO_SPLIT", "no_split_marker", "marker", comment="No boundary was found.")
                comment_link(
                    source=result_rv,
                    target=marker,
                    category="boundary_detection",
                    comment="The episode continues.",
                )
        return temp_rv

    def _record_memcell(self, record: MemcellRecord, *, source_rv: Any) -> None:
        from smartcomment import comment_link, comment_mutation, comment_op, comment_op_scope

        unit = dict(record.unit_v1)
        if source_rv is not None:
            comment_op(
                inputs=[source_rv],
                outputs=[(dict(unit), _unit_opts())],
                op_name="memory_system.finalize_memory_unit",
                category="initialization",
                comment=f"The memcell becomes memory unit '{record.memcell.event_id}'.",
            )
        with comment_op_scope(
            op_name="memory_system.extract_memory",
            category="extraction",
            comment="The LLM enriches the memory unit (episode, event log, foresight).",
            metadata={
                "llm_model": self.llm_model,
                "foresight_enabled": self.foresight,
                "event_log_enabled": self.event_log,
            },
        ):
            for stage in record.stages:
                template_name, template, prompt_cls, raw_cls, parsed_cls, parser = _STAGE_NODES[stage.kind]
                meta = {"op_type": _OP_TYPES[stage.kind]}
                template_rv = _named(
                    template.template,
                    template_name,
                    metadata=meta,
                    comment=f"The {stage.kind} extraction prompt template.",
                )
                inputs = [(dict(unit), _unit_opts(identity_only=True)), template_rv]
                if stage.kind == "episode":
                    inputs.append(
                        _named(
                            EPISODE_CUSTOM_INSTRUCTIONS,
                            "episode-extraction-custom-instructions",
                            metadata={**meta, "mode": "group"},
                            comment="Fixed style instructions for episodes.",
                        )
                    )
                prompt_rv = _node(stage.outcome.prompt, prompt_cls, "prompt")
                comment_op(
                    inputs=inputs,
                    outputs=[prompt_rv],
                    reuse_op=True,
                    comment=f"The {stage.kind} prompt is assembled.",
                )
                if stage.unit_after is None:
                    marker = _node("FAILED", "failed_marker", "marker", comment="An extraction failed.")
                    comment_link(
                        source=prompt_rv,
                        target=marker,
                        category="extraction",
                        comment=f"The {stage.kind} extraction failed after all attempts.",
                        edge_metadata={"error": record.failure or "; ".join(stage.outcome.errors)},
                    )
                    return
                raw_rv = _node(stage.outcome.responses[-1], raw_cls, "llm_response")
                comment_link(
                    source=prompt_rv,
                    target=raw_rv,
                    category="extraction",
                    comment=f"The LLM writes the {stage.kind}.",
                )
                parsed = stage.outcome.value
                parsed_rv = _node(
                    parsed, parsed_cls, "llm_response", encoding_fn=json_encode, decoding_fn=json.loads
                )
                comment_link(
                    source=raw_rv,
                    target=parsed_rv,
                    category="extraction",
                    comment="The reply is parsed.",
                    edge_metadata={"source_code": _source(parser)},
                )
                with comment_mutation(
                    target=unit,
                    inputs=[parsed_rv],
                    id_strategy=unit_identity,
                    encoding_fn=json_encode,
                    decoding_fn=json.loads,
                    category="memory_entry",
                    mutation_comment=f"The {stage.kind} is written into the memory unit.",
                    mutation_category="mutation",
                    reuse_op=True,
                ):
                    unit.clear()
                    unit.update(stage.unit_after)
            if record.unit_final is not None:
                with comment_mutation(
                    target=unit,
                    id_strategy=unit_identity,
                    encoding_fn=json_encode,
                    decoding_fn=json.loads,
                    category="memory_entry",
                    mutation_comment="The raw messages are dropped; the unit is indexed.",
                    mutation_category="mutation",
                    reuse_op=True,
                ):
                    unit.clear()
                    unit.update(record.unit_final)

    # -- retrieval ----------------------------------------------------------------------------------
    def _units(self, ranked: list[tuple[dict[str, Any], float]]) -> list[Any]:
        return [(retrieval_projection(doc), _unit_opts(identity_only=True)) for doc, _ in ranked]

    def _params(self, config: Any, *fields: str, top_k: int | None = None) -> list[Any]:
        """Handles of the retrieval parameters `fields` (of `config`) and, if given, `top_k`."""
        values: dict[str, Any] = {f"retrieval_config.{f}": getattr(config, f) for f in fields}
        if top_k is not None:
            values["top_k"] = top_k
        return self._parameters.handles(values)

    def _hybrid_lists(self, run: HybridRun, query_rv: Any, config: Any) -> tuple[Any, Any]:
        from smartcomment import comment_op

        sparse_rv = _node(_ranked_value(run.sparse), "sparse_retrieval_results", encoding_fn=json_encode)
        dense_rv = _node(_ranked_value(run.dense), "dense_retrieval_results", encoding_fn=json_encode)
        meta = {"bm25_top_n": config.bm25_top_n, "emb_top_n": config.emb_top_n}
        comment_op(
            inputs=[query_rv, *self._params(config, "bm25_top_n")],
            outputs=[sparse_rv],
            reuse_op=True,
            metadata=meta,
            comment="BM25 search over the memory units.",
        )
        comment_op(
            inputs=[query_rv, *self._params(config, "emb_top_n")],
            outputs=[dense_rv],
            reuse_op=True,
            metadata=meta,
            comment="Embedding search over the memory units.",
        )
        return sparse_rv, dense_rv

    def record_retrieval(
        self, run: HybridRun | AgenticRun | None, query_rv: Any, k: int, config: Any
    ) -> None:
        """Record one retrieval (`config` is the layer's `OnlineRetrieverConfig`)."""
        if run is None or query_rv is None or not tracing_active():
            return
        with _never_raise("retrieval"):
            if isinstance(run, AgenticRun):
                self._record_agentic(run, query_rv, k, config)
            else:
                self._record_plain(run, query_rv, k, config)

    def _record_plain(self, run: HybridRun, query_rv: Any, k: int, config: Any) -> None:
        from smartcomment import comment_op, comment_op_scope

        mode = config.retrieval_mode
        if mode == "hybrid":
            with comment_op_scope(
                op_name="memory_system.hybrid_retrieval",
                category="retrieval",
                comment="Hybrid retrieval: BM25 and embedding lists fused with RRF.",
                metadata={
                    "mode": "hybrid_retrieval",
                    "top_k": k,
                    "embedding_model": self.embedding_model,
                    "rrf_k": config.rrf_k,
                },
            ):
                sparse_rv, dense_rv = self._hybrid_lists(run, query_rv, config)
                fusion = self._params(config, "retrieval_mode", "rrf_k", top_k=k)
                for unit in self._units(run.fused):
                    comment_op(
                        inputs=[sparse_rv, dense_rv, *fusion],
                        outputs=[unit],
                        reuse_op=True,
                        metadata={"rrf_k": config.rrf_k},
                        comment="RRF keeps this unit.",
                    )
            return
        name, meta = (
            ("memory_system.bm25_retrieval", {"mode": "sparse_retrieval", "top_k": k})
            if mode == "bm25_only"
            else (
                "memory_system.embedding_retrieval",
                {"mode": "dense_retrieval", "top_k": k, "embedding_model": self.embedding_model},
            )
        )
        with comment_op_scope(
            op_name=name, category="retrieval", metadata=meta, comment=f"{mode} retrieval."
        ):
            params = self._params(config, "retrieval_mode", top_k=k)
            for unit in self._units(run.fused):
                comment_op(
                    inputs=[query_rv, *params], outputs=[unit], reuse_op=True, comment="The unit is retrieved."
                )

    def _record_agentic(self, run: AgenticRun, query_rv: Any, k: int, config: Any) -> None:
        from smartcomment import comment_link, comment_op, comment_op_scope

        with comment_op_scope(
            op_name="memory_system.agentic_round1_bundle",
            category="retrieval",
            comment="Round 1: hybrid retrieval and the LLM sufficiency check.",
            metadata={
                "round": 1,
                "retrieval_mode": "agentic",
                "top_k": k,
                "sufficiency_check_docs": config.sufficiency_check_docs,
                "use_reranker": config.use_reranker,
            },
        ):
            sparse_rv, dense_rv = self._hybrid_lists(run.round1, query_rv, config)
            hybrid_rv = _node(
                _ranked_value(run.round1.fused), "hybrid_retrieval_results", encoding_fn=json_encode
            )
            comment_op(
                inputs=[sparse_rv, dense_rv, *self._params(config, "retrieval_mode", "rrf_k")],
                outputs=[hybrid_rv],
                reuse_op=True,
                comment="RRF fuses the two lists.",
            )
            if not run.r1:
                empty = _node([], "agentic_retrieval_results", encoding_fn=json_encode)
                comment_link(
                    source=hybrid_rv, target=empty, category="retrieval", comment="Nothing was found."
                )
                return
            r1_rv = hybrid_rv
            if run.reranked_round1 is not None:
                r1_rv = _node(
                    _ranked_value(run.reranked_round1), "reranked_round1_results", encoding_fn=json_encode
                )
                comment_link(
                    source=hybrid_rv, target=r1_rv, category="retrieval", comment="The reranker reorders."
                )
            check_rv = _node(_ranked_value(run.check_set), "reranked_for_check", encoding_fn=json_encode)
            comment_link(
                source=r1_rv, target=check_rv, category="retrieval", comment="The top documents are checked."
            )
            docs_rv = _node(run.check_docs_text, "sufficiency_check_docs_text", "formatted_documents")
            comment_link(
                source=check_rv,
                target=docs_rv,
                category="retrieval",
                comment="Documents are rendered.",
                edge_metadata={"source_code": _source(format_documents)},
            )
            template_rv = _named(
                SUFFICIENCY_CHECK_PROMPT.template,
                SUFFICIENCY_CHECK_PROMPT.name,
                class_name=SUFFICIENCY_CHECK_PROMPT.class_name,
                comment="The sufficiency-check prompt template.",
            )
            prompt_rv = _node(run.check_prompt, "sufficiency_check_prompt", "prompt")
            comment_op(
                inputs=[query_rv, docs_rv, template_rv],
                outputs=[prompt_rv],
                reuse_op=True,
                comment="The sufficiency prompt is assembled.",
            )
            result_source = prompt_rv
            if run.check_response is not None:
                raw_rv = _node(run.check_response, "raw_sufficiency_check_response", "llm_response")
                comment_link(source=prompt_rv, target=raw_rv, category="retrieval", comment="The LLM judges.")
                result_source = raw_rv
            result_rv = _node(
                run.check_result, "sufficiency_check_result", encoding_fn=json_encode, decoding_fn=json.loads
            )
            comment_link(
                source=result_source,
                target=result_rv,
                category="retrieval",
                comment="The verdict is parsed (failures count as sufficient).",
                edge_metadata={"error": run.check_error}
                if run.check_error
                else {"source_code": _source(parse_sufficiency_reply)},
            )
            if run.sufficient:
                top_k = self._params(config, top_k=k)
                for unit in self._units(run.final):
                    comment_op(
                        inputs=[result_rv, r1_rv, *top_k],
                        outputs=[unit],
                        reuse_op=True,
                        comment="Sufficient: the unit is returned from round 1.",
                    )
                return

        with comment_op_scope(
            op_name="memory_system.agentic_round2_bundle",
            category="retrieval",
            comment="Round 2: new queries from the missing information, hybrid retrieval each.",
            metadata={
                "round": 2,
                "retrieval_mode": "agentic",
                "top_k": k,
                "multi_query": config.use_multi_query,
            },
        ):
            multi = config.use_multi_query
            kind = "multi_query" if multi else "refined_query"
            docs2_rv = _node(run.check_docs_text, f"{kind}_docs_text", "formatted_documents")
            comment_link(
                source=check_rv, target=docs2_rv, category="retrieval", comment="Documents are rendered."
            )
            round2_template = MULTI_QUERY_PROMPT if multi else REFINED_QUERY_PROMPT
            template_rv = _named(
                round2_template.template,
                round2_template.name,
                class_name=round2_template.class_name,
                comment="The round-2 query prompt template.",
            )
            pcls = "multi_query_generation_prompt" if multi else "refined_query_prompt"
            prompt_rv = _node(run.round2_prompt or "", pcls, "prompt")
            comment_op(
                inputs=[query_rv, result_rv, docs2_rv, template_rv],
                outputs=[prompt_rv],
                reuse_op=True,
                comment="The round-2 prompt is assembled.",
            )
            queries_rv = _node(
                list(run.refined_queries), "refined_queries", encoding_fn=json_encode, decoding_fn=json.loads
            )
            if run.round2_response is not None:
                raw_rv = _node(
                    run.round2_response,
                    f"raw_{pcls}_response".replace("_prompt_response", "_response"),
                    "llm_response",
                )
                comment_link(
                    source=prompt_rv, target=raw_rv, category="retrieval", comment="The LLM writes queries."
                )
                comment_link(
                    source=raw_rv,
                    target=queries_rv,
                    category="retrieval",
                    comment="Queries are parsed.",
                    edge_metadata={"source_code": _source(parse_multi_query_reply)},
                )
            else:
                comment_link(
                    source=prompt_rv,
                    target=queries_rv,
                    category="retrieval",
                    comment="The original query is kept.",
                    edge_metadata={"error": run.round2_error},
                )
            round2_rv = _node(_ranked_value(run.r2), "round2_retrieval_results", encoding_fn=json_encode)
            for branch in run.round2_runs:
                q_rv = _node(branch.query, "refined_query")
                comment_link(
                    source=queries_rv, target=q_rv, category="retrieval", comment="One round-2 query."
                )
                s_rv, d_rv = self._hybrid_lists(branch, q_rv, config)
                h_rv = _node(_ranked_value(branch.fused), "hybrid_retrieval_results", encoding_fn=json_encode)
                comment_op(
                    inputs=[s_rv, d_rv, *self._params(config, "rrf_k")],
                    outputs=[h_rv],
                    reuse_op=True,
                    comment="RRF fuses the two lists.",
                )
                comment_link(
                    source=h_rv, target=round2_rv, category="retrieval", comment="Branches are fused."
                )

        with comment_op_scope(
            op_name="memory_system.agentic_final_rerank",
            category="retrieval",
            comment="Merge both rounds (dedup by event id, at most 2k), rerank or cut to k.",
            metadata={"top_k": k, "use_reranker": config.use_reranker},
        ):
            combined_rv = _node(
                _ranked_value(run.combined), "combined_retrieval_results", encoding_fn=json_encode
            )
            comment_op(
                inputs=[r1_rv, round2_rv],
                outputs=[combined_rv],
                reuse_op=True,
                comment="Round-1 and round-2 documents are merged.",
            )
            final_source = combined_rv
            if run.final_reranked is not None:
                final_source = _node(
                    _ranked_value(run.final_reranked), "final_reranked_results", encoding_fn=json_encode
                )
                comment_link(
                    source=combined_rv,
                    target=final_source,
                    category="retrieval",
                    comment="The reranker orders the merged pool.",
                )
            top_k = self._params(config, top_k=k)
            for unit in self._units(run.final):
                comment_op(
                    inputs=[final_source, *top_k], outputs=[unit], reuse_op=True, comment="The unit is returned."
                )
