"""The recording API: ``comment_graph``, ``comment_session``, ``comment_op_scope``,
``propagate_attributes``, ``comment_variable``, ``comment_op``, ``comment_link``,
``comment_mutation`` and ``comment_fn``.

Behaviour follows smartcomment 0.1.2 (spec-tracer-and-membase §1): every call is a no-op that
returns its input when tracing is disabled; values are resolved to versioned variable nodes by
identity and encoded value (§1.8); operations connect resolved inputs to resolved outputs.
"""

from __future__ import annotations

import asyncio
import functools
import inspect
import sys
from collections.abc import Callable, Iterable
from contextvars import ContextVar
from typing import Any

from smartcomment.identity.registry import IdentityRegistry
from smartcomment.runtime.context import (
    _CONTEXT,
    _GRAPH,
    _OP,
    _SESSION,
    TracingContext,
    is_tracing_enabled,
    logger,
)
from smartcomment.runtime.errors import TraceConsistencyError
from smartcomment.runtime.network import NONE_FULL_NODE_ID, NONE_IDENTITY, NONE_SESSION_ID, ExecNetwork
from smartcomment.runtime.operation import RuntimeEdge, RuntimeOp
from smartcomment.runtime.session import RuntimeSession
from smartcomment.runtime.variable import RuntimeVariable
from smartcomment.schema.operation import OpEdge, OpRecord
from smartcomment.schema.session import Session
from smartcomment.schema.variable import Variable

_ITEM_OPTIONS = frozenset(
    {
        "id_strategy",
        "encoding_fn",
        "decoding_fn",
        "schema",
        "comment",
        "category",
        "class_name",
        "auto_class_name",
        "variable_name",
        "metadata",
        "identity_only",
    }
)


# ---------------------------------------------------------------------------- helpers
def _require_graph(api: str) -> ExecNetwork:
    graph = _GRAPH.get()
    if graph is None:
        raise RuntimeError(f"{api} requires an active graph context: open `with comment_graph(...)` first")
    return graph


def _propagated() -> dict[str, Any]:
    ctx = _CONTEXT.get()
    return ctx._metadata if ctx is not None else {}


def _merge(own: dict[str, Any] | None, propagated: dict[str, Any]) -> dict[str, Any]:
    if not own:
        return dict(propagated)
    if not propagated:
        return dict(own)
    return {**own, **propagated}


def _session_id(graph: ExecNetwork) -> str:
    session = _SESSION.get()
    if session is not None:
        return session.session_id
    return graph._none_session().session_id


def _encode(value: Any, encoding_fn: Callable[[Any], str] | None, schema: Any) -> str:
    if schema is not None and encoding_fn is None:
        encoded = value.model_dump_json()
    elif encoding_fn is not None:
        encoded = encoding_fn(value)
    else:
        return repr(value)
    if not isinstance(encoded, str):
        raise TypeError(f"encoding_fn must return a str, got {type(encoded).__name__}")
    return encoded


def _diff_snippet(old: str, new: str) -> str:
    limit = min(len(old), len(new))
    pos = next((i for i in range(limit) if old[i] != new[i]), limit)
    return f"at char {pos}: {old[max(0, pos - 30):pos + 30]!r} -> {new[max(0, pos - 30):pos + 30]!r}"


def _resolve(
    graph: ExecNetwork,
    value: Any,
    session_id: str,
    filename: str,
    lineno: int,
    propagated: dict[str, Any],
    *,
    id_strategy: Any = None,
    encoding_fn: Callable[[Any], str] | None = None,
    decoding_fn: Callable[[str], Any] | None = None,
    schema: Any = None,
    comment: str | None = None,
    category: str = "variable",
    class_name: str | None = None,
    auto_class_name: bool = False,
    identity_only: bool = False,
    metadata: dict[str, Any] | None = None,
    variable_name: str | None = None,
    force_new_version: bool = False,
) -> RuntimeVariable:
    """Map a value to a variable node: reuse the latest version if equal, else add a version."""
    if auto_class_name and class_name is None:
        class_name = type(value).__qualname__
    encoded = _encode(value, encoding_fn, schema)
    name = IdentityRegistry.resolve(value, id_strategy)(value)
    if not isinstance(name, str):
        raise TypeError(f"identity strategy returned {type(name).__name__}, expected str")
    if name == NONE_IDENTITY:
        raise ValueError(f"identity {NONE_IDENTITY!r} is reserved for the NONE sentinel node")
    full_name = f"{class_name}:{name}" if class_name else name
    driver = graph._driver
    with graph._lock:
        latest = driver.get_latest_node(full_name)
        if latest is not None and not force_new_version and (identity_only or latest.value == encoded):
            node = latest
        else:
            if latest is not None and not force_new_version:
                if graph.strict:
                    raise TraceConsistencyError(
                        user_value=value, user_value_encoded=encoded, existing_variable=latest, identity_name=full_name
                    )
                logger.info("new version of %s (%s)", full_name, _diff_snippet(latest.value, encoded))
            node = Variable(
                name=name,
                version=latest.version + 1 if latest is not None else 1,
                value=encoded,
                comment=comment,
                category=category,
                class_name=class_name,
                graph_id=graph.graph_id,
                user_id=graph.user_id,
                project_id=graph.project_id,
                session_id=session_id,
                filename=filename,
                lineno=lineno,
                metadata=_merge(metadata, propagated),
            )
            driver.add_node(node)
    rv = RuntimeVariable(node, encoding_fn=encoding_fn, decoding_fn=decoding_fn, schema=schema)
    if variable_name is not None:
        ctx = _CONTEXT.get()
        if ctx is not None:
            ctx.register_variable(variable_name, rv, overwrite=True)
    return rv


def _resolve_item(
    graph: ExecNetwork,
    item: Any,
    defaults: dict[str, Any],
    session_id: str,
    filename: str,
    lineno: int,
    propagated: dict[str, Any],
    force_new_version: bool = False,
) -> RuntimeVariable:
    """Resolve a value-option slot: a handle, a raw value, or ``(value, {options})``."""
    if isinstance(item, RuntimeVariable) and not force_new_version:
        return item
    if isinstance(item, tuple) and len(item) == 2 and isinstance(item[1], dict):
        value, options = item
        unknown = set(options) - _ITEM_OPTIONS
        if unknown:
            raise TypeError(f"unknown option(s) {sorted(unknown)} for a traced value; allowed: {sorted(_ITEM_OPTIONS)}")
        options = {**defaults, **options}
    else:
        value, options = item, defaults
    if isinstance(value, RuntimeVariable):
        return value
    return _resolve(graph, value, session_id, filename, lineno, propagated, force_new_version=force_new_version, **options)


def _add_edges(
    graph: ExecNetwork,
    op: OpRecord,
    inputs: list[RuntimeVariable],
    outputs: list[RuntimeVariable],
    *,
    category: str,
    comment: str | None,
    metadata: dict[str, Any],
    session_id: str,
    filename: str,
    lineno: int,
) -> None:
    if not inputs and not outputs:
        return
    with graph._lock:
        if not inputs or not outputs:
            none_id = graph._none_node().full_node_id
            sources = [rv.full_node_id for rv in inputs] or [none_id]
            targets = [rv.full_node_id for rv in outputs] or [none_id]
        else:
            sources = [rv.full_node_id for rv in inputs]
            targets = [rv.full_node_id for rv in outputs]
        add = graph._driver.add_edge
        for source in sources:
            for target in targets:
                add(
                    OpEdge(
                        graph_id=graph.graph_id,
                        user_id=graph.user_id,
                        project_id=graph.project_id,
                        session_id=session_id,
                        op_id=op.op_id,
                        category=category,
                        source_full_node_id=source,
                        target_full_node_id=target,
                        comment=comment,
                        filename=filename,
                        lineno=lineno,
                        metadata=dict(metadata),
                    )
                )


def _new_op(
    graph: ExecNetwork,
    *,
    op_name: str | None,
    comment: str | None,
    category: str,
    metadata: dict[str, Any],
    session_id: str,
    filename: str,
    lineno: int,
) -> OpRecord:
    op = OpRecord(
        op_name=op_name,
        comment=comment,
        category=category,
        graph_id=graph.graph_id,
        user_id=graph.user_id,
        project_id=graph.project_id,
        session_id=session_id,
        filename=filename,
        lineno=lineno,
        metadata=metadata,
    )
    with graph._lock:
        graph._driver.add_operation(op)
    return op


# ---------------------------------------------------------------------------- scopes
class _Scope:
    """A ``with`` scope that sets ContextVars on enter and resets them by token on exit."""

    __slots__ = ("_resets",)

    def _set(self, *pairs: tuple[ContextVar, Any]) -> None:
        self._resets = [(var, var.set(value)) for var, value in pairs]

    def __exit__(self, *exc: object) -> bool:
        for var, token in reversed(getattr(self, "_resets", None) or ()):
            var.reset(token)
        self._resets = None
        return False


class comment_graph(_Scope):  # noqa: N801 - the public API name of smartcomment 0.1.2
    """Open (or adopt) an execution graph for the enclosed code; yields the ``ExecNetwork``.

    Yields None and records nothing when tracing is disabled.
    """

    __slots__ = ("_kwargs", "_graph", "_metadata", "_strict")

    def __init__(
        self,
        *,
        graph_id: str | None = None,
        user_id: str | None = None,
        project_id: str | None = None,
        storage_path: str | None = None,
        driver_type: str | None = None,
        graph: ExecNetwork | None = None,
        metadata: dict[str, Any] | None = None,
        strict: bool | None = None,
    ) -> None:
        self._kwargs = {
            k: v
            for k, v in (
                ("graph_id", graph_id),
                ("user_id", user_id),
                ("project_id", project_id),
                ("storage_path", storage_path),
                ("driver_type", driver_type),
                ("strict", strict),
            )
            if v is not None
        }
        self._graph = graph
        self._metadata = metadata
        self._strict = strict

    def __enter__(self) -> ExecNetwork | None:
        if not is_tracing_enabled():
            return None
        if self._graph is None:
            graph = ExecNetwork(**self._kwargs)
            logger.info("opened graph %s", graph.graph_id)
        else:
            graph = self._graph
            if self._strict is not None:
                graph.strict = self._strict
            logger.debug("adopted graph %s", graph.graph_id)
        if self._metadata:
            graph.update_metadata(self._metadata)
        parent = _CONTEXT.get()
        if parent is not None and parent._metadata:
            graph.update_metadata(parent._metadata)
        self._set((_GRAPH, graph), (_CONTEXT, TracingContext.inherit(parent)))
        return graph


class comment_session(_Scope):  # noqa: N801
    """Record a session (a stage of the run) around the enclosed code; yields a ``RuntimeSession``."""

    __slots__ = ("_session_id", "_session_name", "_comment", "_category", "_metadata", "_where")

    def __init__(
        self,
        *,
        session_id: str | None = None,
        session_name: str | None = None,
        comment: str | None = None,
        category: str = "session",
        metadata: dict[str, Any] | None = None,
    ) -> None:
        frame = sys._getframe(1)
        self._where = (frame.f_code.co_filename, frame.f_lineno)
        self._session_id = session_id
        self._session_name = session_name
        self._comment = comment
        self._category = category
        self._metadata = metadata

    def __enter__(self) -> RuntimeSession | None:
        if not is_tracing_enabled():
            return None
        graph = _require_graph("comment_session")
        if self._session_id == NONE_SESSION_ID:
            raise ValueError(f"session id {NONE_SESSION_ID!r} is reserved for the NONE sentinel session")
        parent = _CONTEXT.get()
        session = Session(
            session_id=self._session_id,
            session_name=self._session_name,
            comment=self._comment,
            category=self._category,
            graph_id=graph.graph_id,
            user_id=graph.user_id,
            project_id=graph.project_id,
            filename=self._where[0],
            lineno=self._where[1],
            metadata=_merge(self._metadata, parent._metadata if parent is not None else {}),
        )
        with graph._lock:
            graph._driver.add_session(session)
        self._set((_SESSION, session), (_CONTEXT, TracingContext.inherit(parent)))
        return RuntimeSession(session)


class comment_op_scope(_Scope):  # noqa: N801
    """Make an operation current for the enclosed code; yields its ``RuntimeOp``.

    Without an active session an anonymous session is opened for the scope.
    """

    __slots__ = ("_op_name", "_comment", "_category", "_metadata", "_where")

    def __init__(
        self,
        *,
        op_name: str | None = None,
        comment: str | None = None,
        category: str = "operation",
        metadata: dict[str, Any] | None = None,
    ) -> None:
        frame = sys._getframe(1)
        self._where = (frame.f_code.co_filename, frame.f_lineno)
        self._op_name = op_name
        self._comment = comment
        self._category = category
        self._metadata = metadata

    def __enter__(self) -> RuntimeOp | None:
        if not is_tracing_enabled():
            return None
        graph = _require_graph("comment_op_scope")
        propagated = _propagated()
        filename, lineno = self._where
        pairs: list[tuple[ContextVar, Any]] = []
        session = _SESSION.get()
        if session is None:
            session = Session(
                graph_id=graph.graph_id,
                user_id=graph.user_id,
                project_id=graph.project_id,
                filename=filename,
                lineno=lineno,
                metadata=dict(propagated),
            )
            with graph._lock:
                graph._driver.add_session(session)
            pairs.append((_SESSION, session))
        op = _new_op(
            graph,
            op_name=self._op_name,
            comment=self._comment,
            category=self._category,
            metadata=_merge(self._metadata, propagated),
            session_id=session.session_id,
            filename=filename,
            lineno=lineno,
        )
        pairs.append((_OP, op))
        self._set(*pairs)
        return RuntimeOp(op)


class propagate_attributes(_Scope):  # noqa: N801
    """Attach ``attrs`` to the metadata of everything recorded inside (applied last, so they win)."""

    __slots__ = ("_attrs",)

    def __init__(self, **attrs: Any) -> None:
        self._attrs = attrs

    def __enter__(self) -> None:
        if is_tracing_enabled():
            self._set((_CONTEXT, TracingContext.inherit(_CONTEXT.get(), self._attrs)))


# ---------------------------------------------------------------------------- records
def comment_variable(
    value: Any,
    *,
    to_runtime: bool = False,
    variable_name: str | None = None,
    encoding_fn: Callable[[Any], str] | None = None,
    decoding_fn: Callable[[str], Any] | None = None,
    schema: Any = None,
    id_strategy: Any = None,
    comment: str | None = None,
    category: str = "variable",
    class_name: str | None = None,
    auto_class_name: bool = False,
    identity_only: bool = False,
    metadata: dict[str, Any] | None = None,
) -> Any:
    """Record ``value`` as a variable node and return it (or its handle with ``to_runtime``)."""
    if not is_tracing_enabled():
        return value
    if isinstance(value, RuntimeVariable):
        if variable_name is not None:
            ctx = _CONTEXT.get()
            if ctx is not None:
                ctx.register_variable(variable_name, value, overwrite=True)
        return value
    graph = _require_graph("comment_variable")
    frame = sys._getframe(1)
    rv = _resolve(
        graph,
        value,
        _session_id(graph),
        frame.f_code.co_filename,
        frame.f_lineno,
        _propagated(),
        id_strategy=id_strategy,
        encoding_fn=encoding_fn,
        decoding_fn=decoding_fn,
        schema=schema,
        comment=comment,
        category=category,
        class_name=class_name,
        auto_class_name=auto_class_name,
        identity_only=identity_only,
        metadata=metadata,
        variable_name=variable_name,
    )
    return rv if to_runtime else value


def _shared_defaults(
    id_strategy: Any,
    encoding_fn: Any,
    decoding_fn: Any,
    schema: Any,
    auto_class_name: bool,
    metadata: dict[str, Any] | None,
    category: str = "variable",
) -> dict[str, Any]:
    return {
        "id_strategy": id_strategy,
        "encoding_fn": encoding_fn,
        "decoding_fn": decoding_fn,
        "schema": schema,
        "auto_class_name": auto_class_name,
        "metadata": metadata,
        "category": category,
    }


def comment_op(
    *,
    inputs: Iterable[Any],
    outputs: Iterable[Any],
    op_name: str | None = None,
    comment: str | None = None,
    category: str = "operation",
    id_strategy: Any = None,
    encoding_fn: Callable[[Any], str] | None = None,
    decoding_fn: Callable[[str], Any] | None = None,
    schema: Any = None,
    auto_class_name: bool = False,
    metadata: dict[str, Any] | None = None,
    reuse_op: bool = False,
) -> RuntimeOp | None:
    """Record an operation step: an edge from every input to every output.

    The active op is reused when ``op_name`` is None or ``reuse_op`` is set; otherwise a new op
    named ``op_name`` is created. An output that resolves to one of the inputs gets a new
    version (no self-loop). An empty side is stood in for by the NONE sentinel node.
    """
    if not is_tracing_enabled():
        return None
    graph = _require_graph("comment_op")
    frame = sys._getframe(1)
    filename, lineno = frame.f_code.co_filename, frame.f_lineno
    propagated = _propagated()
    session_id = _session_id(graph)
    active = _OP.get()
    if active is not None and (op_name is None or reuse_op):
        op = active
    elif op_name is None:
        raise RuntimeError("comment_op needs op_name when no operation is active (or call it inside comment_op_scope)")
    else:
        op = _new_op(
            graph,
            op_name=op_name,
            comment=comment,
            category=category,
            metadata=_merge(metadata, propagated),
            session_id=session_id,
            filename=filename,
            lineno=lineno,
        )
    defaults = _shared_defaults(id_strategy, encoding_fn, decoding_fn, schema, auto_class_name, metadata)
    ins = [_resolve_item(graph, item, defaults, session_id, filename, lineno, propagated) for item in inputs]
    input_ids = {rv.full_node_id for rv in ins}
    outs = []
    for item in outputs:
        rv = _resolve_item(graph, item, defaults, session_id, filename, lineno, propagated)
        if rv.full_node_id in input_ids:
            logger.warning("output %s equals an input of the same op; recording a new version", rv.full_node_id)
            rv = _resolve_item(graph, item, defaults, session_id, filename, lineno, propagated, force_new_version=True)
        outs.append(rv)
    _add_edges(
        graph, op, ins, outs, category=category, comment=comment, metadata=_merge(metadata, propagated),
        session_id=session_id, filename=filename, lineno=lineno,
    )
    return RuntimeOp(op)


def comment_link(
    *,
    source: Any,
    target: Any,
    comment: str | None = None,
    category: str | None = None,
    id_strategy: Any = None,
    encoding_fn: Callable[[Any], str] | None = None,
    decoding_fn: Callable[[str], Any] | None = None,
    schema: Any = None,
    auto_class_name: bool = False,
    metadata: dict[str, Any] | None = None,
    edge_metadata: dict[str, Any] | None = None,
) -> RuntimeEdge | None:
    """Record one edge ``source -> target`` in the active op (or the NONE sentinel op)."""
    if not is_tracing_enabled():
        return None
    graph = _require_graph("comment_link")
    frame = sys._getframe(1)
    filename, lineno = frame.f_code.co_filename, frame.f_lineno
    propagated = _propagated()
    session_id = _session_id(graph)
    defaults = _shared_defaults(id_strategy, encoding_fn, decoding_fn, schema, auto_class_name, metadata)
    src = _resolve_item(graph, source, defaults, session_id, filename, lineno, propagated)
    tgt = _resolve_item(graph, target, defaults, session_id, filename, lineno, propagated)
    op = _OP.get()
    if op is not None:
        edge_category = category if category is not None else op.category
        edge_comment = comment if comment is not None else op.comment
    else:
        with graph._lock:
            op = graph._none_op()
        edge_category = category if category is not None else "link"
        edge_comment = comment
    edge = OpEdge(
        graph_id=graph.graph_id,
        user_id=graph.user_id,
        project_id=graph.project_id,
        session_id=session_id,
        op_id=op.op_id,
        category=edge_category,
        source_full_node_id=src.full_node_id,
        target_full_node_id=tgt.full_node_id,
        comment=edge_comment,
        filename=filename,
        lineno=lineno,
        metadata=_merge(edge_metadata, propagated),
    )
    with graph._lock:
        graph._driver.add_edge(edge)
    return RuntimeEdge(edge)


class comment_mutation:  # noqa: N801
    """Record an in-place change of ``target`` made inside the ``with`` block.

    On enter the current value is resolved (the "before" node); on a normal exit the value is
    re-encoded into a new version, linked from the before node ("Version lineage.") and from
    each of ``inputs``. ``result`` then holds the new version's handle.
    """

    __slots__ = (
        "_target", "_inputs", "_comment", "_category", "_class_name", "_auto_class_name", "_id_strategy",
        "_encoding_fn", "_decoding_fn", "_schema", "_mutation_name", "_mutation_comment", "_mutation_category",
        "_metadata", "_mutation_metadata", "_reuse_op", "_where", "_before", "_resolved_inputs", "_graph",
        "_result",
    )

    def __init__(
        self,
        *,
        target: Any,
        inputs: Iterable[Any] | None = None,
        comment: str | None = None,
        category: str = "variable",
        class_name: str | None = None,
        auto_class_name: bool = False,
        id_strategy: Any = None,
        encoding_fn: Callable[[Any], str] | None = None,
        decoding_fn: Callable[[str], Any] | None = None,
        schema: Any = None,
        mutation_name: str | None = None,
        mutation_comment: str | None = None,
        mutation_category: str = "mutation",
        metadata: dict[str, Any] | None = None,
        mutation_metadata: dict[str, Any] | None = None,
        reuse_op: bool = False,
    ) -> None:
        if isinstance(target, RuntimeVariable):
            raise ValueError(
                "comment_mutation needs the mutable object itself as target, not a RuntimeVariable handle"
            )
        frame = sys._getframe(1)
        self._where = (frame.f_code.co_filename, frame.f_lineno)
        self._target = target
        self._inputs = list(inputs) if inputs is not None else []
        self._comment = comment
        self._category = category
        self._class_name = class_name
        self._auto_class_name = auto_class_name
        self._id_strategy = id_strategy
        self._encoding_fn = encoding_fn
        self._decoding_fn = decoding_fn
        self._schema = schema
        self._mutation_name = mutation_name
        self._mutation_comment = mutation_comment
        self._mutation_category = mutation_category
        self._metadata = metadata
        self._mutation_metadata = mutation_metadata
        self._reuse_op = reuse_op
        self._before: RuntimeVariable | None = None
        self._resolved_inputs: list[RuntimeVariable] = []
        self._graph: ExecNetwork | None = None
        self._result: RuntimeVariable | None = None

    @property
    def target(self) -> Any:
        """The mutated object."""
        return self._target

    @property
    def result(self) -> RuntimeVariable | None:
        """The new version's handle after a normal exit (None otherwise)."""
        return self._result

    def __enter__(self) -> comment_mutation:
        if not is_tracing_enabled():
            return self
        graph = _require_graph("comment_mutation")
        filename, lineno = self._where
        propagated = _propagated()
        session_id = _session_id(graph)
        self._before = _resolve(
            graph, self._target, session_id, filename, lineno, propagated,
            id_strategy=self._id_strategy, encoding_fn=self._encoding_fn, decoding_fn=self._decoding_fn,
            schema=self._schema, comment=self._comment, category=self._category, class_name=self._class_name,
            auto_class_name=self._auto_class_name, metadata=self._metadata,
        )
        defaults = _shared_defaults(
            self._id_strategy, self._encoding_fn, self._decoding_fn, self._schema, self._auto_class_name,
            self._metadata, category=self._category,
        )
        self._resolved_inputs = [
            _resolve_item(graph, item, defaults, session_id, filename, lineno, propagated) for item in self._inputs
        ]
        for rv in self._resolved_inputs:
            if rv.full_node_id == self._before.full_node_id:
                raise ValueError(f"comment_mutation: input {rv.full_node_id!r} is the mutated target itself")
        self._graph = graph
        return self

    def __exit__(self, exc_type: object, exc: object, tb: object) -> bool:
        graph, before = self._graph, self._before
        self._graph = None
        if graph is None or before is None or exc_type is not None:
            return False
        frame = sys._getframe(1)
        filename, lineno = frame.f_code.co_filename, frame.f_lineno
        propagated = _propagated()
        session_id = _session_id(graph)
        encoded = _encode(self._target, self._encoding_fn, self._schema)
        old = before.variable
        with graph._lock:
            # Number after the newest existing version, so a version recorded inside the block
            # does not collide (smartcomment 0.1.2 raised a duplicate-node error there).
            versions = graph._driver.get_nodes_by_name(old.full_name)
            newest = versions[-1].version if versions else old.version
            node = Variable(
                name=old.name,
                class_name=old.class_name,
                version=max(old.version, newest) + 1,
                value=encoded,
                category=old.category,
                comment=old.comment,
                graph_id=graph.graph_id,
                user_id=graph.user_id,
                project_id=graph.project_id,
                session_id=session_id,
                filename=filename,
                lineno=lineno,
                metadata=_merge(self._metadata, propagated),
            )
            graph._driver.add_node(node)
        edge_metadata = _merge(self._mutation_metadata, propagated)
        active = _OP.get()
        if self._reuse_op and active is not None:
            op = active
        else:
            op = _new_op(
                graph,
                op_name=self._mutation_name or f"mutation:{old.full_name}",
                comment=self._mutation_comment,
                category=self._mutation_category,
                metadata=edge_metadata,
                session_id=session_id,
                filename=filename,
                lineno=lineno,
            )
        new_rv = RuntimeVariable(node, encoding_fn=self._encoding_fn, decoding_fn=self._decoding_fn, schema=self._schema)
        common = dict(category=self._mutation_category, metadata=edge_metadata, session_id=session_id,
                      filename=filename, lineno=lineno)
        _add_edges(graph, op, [before], [new_rv], comment=self._mutation_comment or "Version lineage.", **common)
        for rv in self._resolved_inputs:
            _add_edges(graph, op, [rv], [new_rv], comment=self._mutation_comment, **common)
        self._result = new_rv
        return False


# ---------------------------------------------------------------------------- decorator
def comment_fn(
    *,
    op_name: str | None = None,
    comment: str | None = None,
    category: str = "operation",
    id_strategy: Any = None,
    encoding_fn: Callable[[Any], str] | None = None,
    decoding_fn: Callable[[str], Any] | None = None,
    schema: Any = None,
    auto_class_name: bool = False,
    op_metadata: dict[str, Any] | None = None,
    metadata: dict[str, Any] | None = None,
    param_options: dict[str, dict[str, Any]] | None = None,
    include_source: bool = False,
) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    """Decorate a sync or async function so each call records an op: arguments -> return value.

    Calls go straight through when tracing is off or no graph is active. The op is made current
    while the body runs (so ``comment_link`` inside attaches to it); a body that raises leaves
    the op without edges and the exception propagates. Recording failures after the body are
    logged, never raised into the caller.
    """
    options = param_options or {}
    for key, opts in options.items():
        unknown = set(opts) - _ITEM_OPTIONS
        if unknown:
            raise TypeError(f"comment_fn param_options[{key!r}]: unknown option(s) {sorted(unknown)}")

    def decorate(fn: Callable[..., Any]) -> Callable[..., Any]:
        qualname = fn.__qualname__
        name = op_name or qualname
        doc = inspect.cleandoc(fn.__doc__) if fn.__doc__ else ""
        op_comment = comment if comment is not None else (f"[{qualname}] {doc}" if doc else qualname)
        source = inspect.getsource(fn) if include_source else None
        code = fn.__code__
        filename, lineno = code.co_filename, code.co_firstlineno
        signature = inspect.signature(fn)
        defaults = _shared_defaults(id_strategy, encoding_fn, decoding_fn, schema, auto_class_name, metadata)
        extra = {"source_code": source} if source is not None else {}

        def start(graph: ExecNetwork) -> tuple[OpRecord, Any, str, dict[str, Any]]:
            propagated = _propagated()
            session_id = _session_id(graph)
            active = _OP.get()
            if active is not None:
                return active, None, session_id, propagated
            op = _new_op(
                graph, op_name=name, comment=op_comment, category=category,
                metadata=_merge(op_metadata, propagated), session_id=session_id, filename=filename, lineno=lineno,
            )
            return op, _OP.set(op), session_id, propagated

        def record(graph: ExecNetwork, op: OpRecord, session_id: str, propagated: dict, args: tuple, kwargs: dict,
                   result: Any) -> None:
            try:
                bound = signature.bind(*args, **kwargs)
                bound.apply_defaults()
                ins = [
                    _resolve_item(graph, (value, options.get(param, {})), defaults, session_id, filename, lineno,
                                  propagated)
                    for param, value in bound.arguments.items()
                ]
                outs = (
                    []
                    if result is None
                    else [_resolve_item(graph, (result, options.get("-o", {})), defaults, session_id, filename,
                                        lineno, propagated)]
                )
                _add_edges(
                    graph, op, ins, outs, category=category, comment=op_comment,
                    metadata={**(op_metadata or {}), **extra, **propagated}, session_id=session_id,
                    filename=filename, lineno=lineno,
                )
            except Exception:  # tracing must never break the traced program
                logger.exception("comment_fn could not record a call of %s", qualname)

        if asyncio.iscoroutinefunction(fn):

            @functools.wraps(fn)
            async def async_wrapper(*args: Any, **kwargs: Any) -> Any:
                graph = _GRAPH.get() if is_tracing_enabled() else None
                if graph is None:
                    return await fn(*args, **kwargs)
                op, token, session_id, propagated = start(graph)
                try:
                    result = await fn(*args, **kwargs)
                finally:
                    if token is not None:
                        _OP.reset(token)
                record(graph, op, session_id, propagated, args, kwargs, result)
                return result

            return async_wrapper

        @functools.wraps(fn)
        def wrapper(*args: Any, **kwargs: Any) -> Any:
            graph = _GRAPH.get() if is_tracing_enabled() else None
            if graph is None:
                return fn(*args, **kwargs)
            op, token, session_id, propagated = start(graph)
            try:
                result = fn(*args, **kwargs)
            finally:
                if token is not None:
                    _OP.reset(token)
            record(graph, op, session_id, propagated, args, kwargs, result)
            return result

        return wrapper

    return decorate


# ---------------------------------------------------------------------------- sentinels
def none_identity() -> str:
    """The reserved identity of the NONE sentinel node."""
    return NONE_IDENTITY


def none_full_node_id() -> str:
    """The full node id of the NONE sentinel node."""
    return NONE_FULL_NODE_ID


def none_op_id() -> str:
    """The id of the NONE sentinel operation."""
    from smartcomment.runtime.network import NONE_OP_ID

    return NONE_OP_ID


def none_session_id() -> str:
    """The id of the NONE sentinel session."""
    return NONE_SESSION_ID
