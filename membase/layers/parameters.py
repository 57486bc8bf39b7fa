"""Tunable parameters of the memory layers, and how they are traced.

Each layer declares the settings that shape what reaches the answering step (chunk size, overlap,
how many units a search returns, the retrieval mode, ...) as :class:`TunableParameter` entries
with their kind and search bounds. When tracing, a layer records each parameter it uses as a
variable node and makes it an input of the operations that use it:

* name = the parameter's path: a config field (``max_tokens``), a nested field
  (``retrieval_config.rrf_k``) or ``top_k`` (the ``k`` of ``retrieve``, set by the search runner);
* ``class_name`` = ``"parameter"``, category ``"parameter"`` (so the full name is
  ``parameter:<path>``: one stable, deterministic identity per parameter);
* value = the JSON of the value (``10``, ``null``, ``true``, ``"hybrid"``);
* metadata = kind, bounds or choices, scope and layer type (:meth:`TunableParameter.metadata`).

The edges go from the parameter to the outputs of the op that uses it (e.g. ``parameter:top_k``
-> each retrieved unit), so ``filter_by_operation(op)`` shows the parameters that shaped the op.
Only existing record fields are used: graphs stay readable by smartcomment 0.1.2.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

from membase.layers.tracing import tracing_active

__all__ = [
    "ANSWER_CONTEXT_BUDGET",
    "ANSWER_PARAMETERS",
    "PARAMETER_CATEGORY",
    "PARAMETER_CLASS",
    "TUNABLE_PARAMETERS",
    "ParameterTracer",
    "TunableParameter",
    "encode_parameter_value",
    "get_config_value",
    "set_config_value",
    "tunable_parameters",
]

PARAMETER_CLASS = "parameter"
PARAMETER_CATEGORY = "parameter"

ParameterKind = Literal["int", "float", "categorical"]


@dataclass(frozen=True)
class TunableParameter:
    """One setting a search may change.

    Attributes:
        name: path of the value: a config field, a dotted nested field, or ``top_k``.
        kind: ``int`` / ``float`` (bounded, searched by Bayesian optimization) or ``categorical``.
        low: lower bound (numbers).
        high: upper bound (numbers).
        log: search the range on a log scale.
        choices: the allowed values (categorical).
        scope: ``layer_config`` (a field of the layer config file), ``search`` (the search
            runner's ``top_k``, ``--top-k`` on the command line) or ``answer`` (a setting of the
            answering step, :data:`ANSWER_PARAMETERS`).
        comment: what the parameter does (the node comment).
    """

    name: str
    kind: ParameterKind
    low: float | None = None
    high: float | None = None
    log: bool = False
    choices: tuple[Any, ...] = ()
    scope: Literal["layer_config", "search", "answer"] = "layer_config"
    comment: str = ""
    requires: Mapping[str, str] = field(default_factory=dict)
    """``{value: other parameter}``: choosing ``value`` needs the other parameter set (not null)."""

    def __post_init__(self) -> None:
        if self.kind == "categorical":
            if not self.choices:
                raise ValueError(f"categorical parameter {self.name!r} needs choices")
        elif self.low is None or self.high is None or self.low > self.high:
            raise ValueError(f"{self.kind} parameter {self.name!r} needs low <= high")

    @property
    def full_name(self) -> str:
        """``parameter:<name>``: the node's full name in a graph."""
        return f"{PARAMETER_CLASS}:{self.name}"

    def metadata(self, layer_type: str) -> dict[str, Any]:
        """The node metadata: kind, bounds or choices, scope, layer type."""
        meta: dict[str, Any] = {"tunable": True, "kind": self.kind, "scope": self.scope, "layer_type": layer_type}
        if self.kind == "categorical":
            meta["choices"] = list(self.choices)
        else:
            meta.update(low=self.low, high=self.high, log=self.log)
        if self.requires:
            meta["requires"] = dict(self.requires)
        return meta

    def contains(self, value: Any) -> bool:
        """Whether ``value`` is inside the bounds / among the choices."""
        if self.kind == "categorical":
            return value in self.choices
        if isinstance(value, bool) or not isinstance(value, int | float):
            return False
        if self.kind == "int" and not isinstance(value, int):
            return False
        return self.low <= value <= self.high  # type: ignore[operator]


TOP_K = TunableParameter(
    "top_k", "int", low=1, high=50, scope="search",
    comment="How many memory units the retrieval returns (the search runner's top_k).",
)

TUNABLE_PARAMETERS: dict[str, tuple[TunableParameter, ...]] = {
    "NaiveRAG": (
        TunableParameter(
            "max_tokens", "int", low=64, high=2048, log=True,
            comment="Token limit of a document (deferred mode) or of the carried-over buffer (eager mode).",
        ),
        TunableParameter(
            "num_overlap_msgs", "int", low=0, high=8,
            comment="Messages carried over from one document into the next.",
        ),
        TunableParameter(
            "deferred", "categorical", choices=(False, True), requires={"true": "max_tokens"},
            comment="Cut documents at max_tokens (true) or emit one document per message (false).",
        ),
        TOP_K,
    ),
    "Long-Context": (
        TunableParameter(
            "context_window", "int", low=256, high=128000, log=True,
            comment="Token budget of the kept conversation; the oldest messages are dropped beyond it.",
        ),
    ),
    "Mem0": (TOP_K,),
    "EverMemOS": (
        TunableParameter(
            "retrieval_config.retrieval_mode", "categorical", choices=("agentic", "hybrid", "bm25_only", "emb_only"),
            comment="Retrieval mode: agentic (two rounds with an LLM check), hybrid RRF, BM25 only, embeddings only.",
        ),
        TunableParameter(
            "retrieval_config.bm25_top_n", "int", low=20, high=200,
            comment="Candidates the BM25 search returns before fusion.",
        ),
        TunableParameter(
            "retrieval_config.emb_top_n", "int", low=20, high=200,
            comment="Candidates the embedding search returns before fusion.",
        ),
        TunableParameter(
            "retrieval_config.rrf_k", "int", low=1, high=200,
            comment="The k of reciprocal-rank fusion (larger flattens the rank weights).",
        ),
        TOP_K,
    ),
}


ANSWER_CONTEXT_BUDGET = TunableParameter(
    "answer_context_budget", "int", low=64, high=8192, log=True, scope="answer",
    comment="Token budget of the answering step's context: the formatted memories are cut after it.",
)

ANSWER_PARAMETERS: dict[str, tuple[TunableParameter, ...]] = {
    layer: (ANSWER_CONTEXT_BUDGET,) for layer in ("NaiveRAG", "Mem0", "EverMemOS")
}
"""Settings of the answering step (the evaluation runner), per layer whose memories it formats.

Kept apart from :data:`TUNABLE_PARAMETERS`: they shape the answer, not what the layer builds or
retrieves, and the evaluation runner (not the layer) traces them, only when they are set."""


def tunable_parameters(layer_type: str) -> tuple[TunableParameter, ...]:
    """The tunable parameters a layer type declares (empty for an unknown type)."""
    return TUNABLE_PARAMETERS.get(layer_type, ())


def encode_parameter_value(value: Any) -> str:
    """The node value of a parameter: its JSON."""
    return json.dumps(value, sort_keys=True)


def get_config_value(config: Any, path: str) -> Any:
    """Read a dotted ``path`` from a config object or dict (``retrieval_config.rrf_k``)."""
    value = config
    for part in path.split("."):
        value = value[part] if isinstance(value, Mapping) else getattr(value, part)
    return value


def set_config_value(config: dict[str, Any], path: str, value: Any) -> dict[str, Any]:
    """A copy of the config dict with ``path`` set to ``value`` (nested dicts are created)."""
    out = json.loads(json.dumps(config))
    parts = path.split(".")
    node = out
    for part in parts[:-1]:
        node = node.setdefault(part, {})
    node[parts[-1]] = value
    return out


class ParameterTracer:
    """Records the parameter nodes of one layer and hands out their handles.

    Handles are resolved once per graph and value, so a parameter used at every message costs a
    dictionary look-up, not a node resolution.
    """

    def __init__(self, layer_type: str, specs: tuple[TunableParameter, ...] | None = None) -> None:
        self.layer_type = layer_type
        self._specs = {p.name: p for p in (tunable_parameters(layer_type) if specs is None else specs)}
        self._graph: Any = None
        self._handles: dict[str, tuple[str, Any]] = {}

    def handles(self, values: Mapping[str, Any]) -> list[Any]:
        """Runtime variables of the parameters in ``values`` (name -> value); [] when not tracing."""
        if not values or not tracing_active():
            return []
        from smartcomment import current_graph

        graph = current_graph()
        if graph is not self._graph:
            self._graph, self._handles = graph, {}
        out = []
        for name, value in values.items():
            encoded = encode_parameter_value(value)
            cached = self._handles.get(name)
            if cached is None or cached[0] != encoded:
                cached = (encoded, self._resolve(graph, name, value, encoded))
                self._handles[name] = cached
            out.append(cached[1])
        return out

    def _resolve(self, graph: Any, name: str, value: Any, encoded: str) -> Any:
        from smartcomment import comment_variable

        spec = self._specs.get(name)
        if spec is None:
            raise KeyError(f"{self.layer_type} declares no tunable parameter {name!r}")
        kwargs: dict[str, Any] = dict(
            to_runtime=True,
            id_strategy=lambda _value: name,
            encoding_fn=encode_parameter_value,
            decoding_fn=json.loads,
            class_name=PARAMETER_CLASS,
            category=PARAMETER_CATEGORY,
            comment=spec.comment,
            metadata=spec.metadata(self.layer_type),
        )
        with graph._lock:
            try:
                latest = graph.get_latest_variable(spec.full_name)
            except KeyError:
                latest = None
            if latest is None or latest.raw_value == encoded or not graph.strict:
                return comment_variable(value, **kwargs)
            # A parameter that changed between stages (e.g. a search with another top_k over the same
            # construction graph) is a new version, not a consistency error.
            graph.strict = False
            try:
                return comment_variable(value, **kwargs)
            finally:
                graph.strict = True
