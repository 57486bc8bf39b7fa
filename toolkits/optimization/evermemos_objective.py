r"""Context recall at a token budget for EverMemOS, offline (its deterministic fake model and embedder).

EverMemOS stores episodes, not message text, so :class:`~toolkits.optimization.objective.ContextRecallObjective`
cannot score it. With the fake model (:mod:`membase.layers.evermemos.fake`) every episode retells
its memcell's messages as ``<speaker> said: <text>`` sentences, so an evidence message *reaches*
the context when that sentence appears whole in it: the same test as the NaiveRAG objective
(:func:`~toolkits.optimization.objective.evidence_reaches`), on the fake's wording. With a real
model the episodes paraphrase and this criterion does not apply.

Every tunable parameter of EverMemOS (:data:`membase.layers.parameters.TUNABLE_PARAMETERS`:
``retrieval_mode``, ``bm25_top_n``, ``emb_top_n``, ``rrf_k``, ``top_k``) acts at retrieval, so the
memory of a conversation is built once per construction config (the fields other than
``retrieval_config``) and every evaluation only retrieves again with the candidate retrieval
config. Unlike NaiveRAG's search, agentic retrieval is not a prefix of a longer ranking, so each
``top_k`` is scored by its own retrieval (results are cached per point in memory).

:class:`EverMemOSRoundStep` is the parameter loop's round step with this criterion for choosing
the missed questions of the traced run (the base step tests NaiveRAG's stored message text). The
memory its traced run builds and saves is loaded instead of built again
(:meth:`EverMemOSRecallObjective.adopt_saved_memory`): the saved state holds the memcells, the
BM25 corpus and the vectors, so loading it costs no model call.
"""

from __future__ import annotations

import json
import shutil
import tempfile
import time
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from toolkits.optimization.objective import (
    BudgetedContextBuilder,
    RecallQuestion,
    RecallResult,
    evidence_reaches,
    recall_questions,
)
from toolkits.optimization.param_loop import ParameterRoundStep

__all__ = [
    "EVERMEMOS_OFFLINE_FIELDS",
    "EverMemOSRecallObjective",
    "EverMemOSRoundStep",
    "evermemos_questions",
    "evidence_sentence",
]

LAYER_TYPE = "EverMemOS"
EVERMEMOS_OFFLINE_FIELDS: dict[str, Any] = {
    "llm_config": {"provider": "fake", "model": "evermemos-fake"},
    "embedding_config": {"provider": "fake", "embedding_dims": 256},
}
"""The layer-config fields of an offline EverMemOS: the fake model and the hashing embedder."""
_RETRIEVAL = "retrieval_config"


def evidence_sentence(message: Any) -> str:
    """How the fake's episode retells ``message`` (``<speaker> said: <text>``)."""
    return f"{message.name} said: {message.content}"


def evermemos_questions(dataset: Any) -> tuple[list[RecallQuestion], dict[str, int]]:
    """The scored questions of ``dataset`` with the fake episodes' sentences as evidence texts."""
    from dataclasses import replace

    questions, skipped = recall_questions(dataset)
    sentences = {m.id: evidence_sentence(m) for traj, _ in dataset for m in traj.messages}
    return [replace(q, evidence_texts=tuple(sentences[e] for e in q.evidence_ids)) for q in questions], skipped


@dataclass(kw_only=True)
class _Built:
    workdir: Path | None
    """The folder the objective built in (removed on close); None: a run's saved memory, not ours."""
    layers: dict[str, Any]


class EverMemOSRecallObjective:
    """Context recall at a token budget of an EverMemOS config on fixed conversations (offline).

    The same interface as :class:`~toolkits.optimization.objective.ContextRecallObjective`
    (``evaluate``, ``questions``, ``builds``, ``close``), so the parameter loop and the benchmark
    use either.

    Args:
        dataset: the conversations and their questions.
        base_fields: layer-config fields every evaluation starts from (default: the offline models).
        budget: context budget in tokens.
        k_max: largest ``top_k`` that can be asked for.
        show_progress: a progress bar per build.

    Raises:
        ValueError: no question to score, or ``base_fields`` naming a model that is not the fake.
    """

    layer_type = LAYER_TYPE

    def __init__(self, dataset: Any, base_fields: Mapping[str, Any] | None = None, *, budget: int = 1000,
                 k_max: int = 50, show_progress: bool = False) -> None:
        self.dataset = dataset
        self.base_fields = {**EVERMEMOS_OFFLINE_FIELDS, **dict(base_fields or {})}
        for key in EVERMEMOS_OFFLINE_FIELDS:
            if self.base_fields[key].get("provider") != "fake":
                raise ValueError(f"the EverMemOS recall objective runs offline: {key}.provider must be 'fake'")
        self.budget = budget
        self.k_max = k_max
        self.show_progress = show_progress
        self.questions, self.skipped = evermemos_questions(dataset)
        if not self.questions:
            raise ValueError("no question to score: every question is adversarial or lacks resolvable evidence")
        self._builder = BudgetedContextBuilder(budget)
        self._built: dict[str, _Built] = {}
        self._results: dict[str, dict[str, bool]] = {}
        self.builds = 0
        """Memory builds run by this object (one per construction config)."""
        self.build_seconds = 0.0
        self.adopted = 0
        """Memories loaded from another run's save instead of built (:meth:`adopt_saved_memory`)."""

    def evaluate(self, fields: Mapping[str, Any] | None = None, top_k: int = 10) -> RecallResult:
        """Recall of ``base_fields`` updated by ``fields`` (retrieval config merged), retrieving ``top_k``.

        Raises:
            ValueError: ``top_k`` outside 1 … ``k_max``.
            membase.exceptions.ConfigError: an invalid layer config.
        """
        if not 1 <= top_k <= self.k_max:
            raise ValueError(f"top_k must be within 1..{self.k_max}, got {top_k}")
        merged = self._merged(fields)
        key = json.dumps({"fields": merged, "top_k": top_k}, sort_keys=True, default=str)
        hits = self._results.get(key)
        if hits is None:
            hits = self._score(merged, top_k)
            self._results[key] = hits
        return RecallResult(hits=hits, questions=self.questions)

    def reaches(self, memories: Any, question: RecallQuestion) -> bool:
        """Whether every evidence sentence of ``question`` is in the budgeted context of ``memories``."""
        return evidence_reaches(self._builder(list(memories)), question)

    def adopt_saved_memory(self, fields: Mapping[str, Any] | None, folder: str | Path, dataset: Any) -> bool:
        """Use the memory a run already built and saved for the construction config of ``fields``.

        ``folder`` holds one saved layer per conversation (``<folder>/<conversation id>/``) built
        from ``dataset``. Each scored conversation's layer is loaded with its ``load_memory``
        (memcells, BM25 corpus and vectors: no model call) and every later evaluation of that
        construction config retrieves from it. Only the caller knows the save is complete: call
        this for a run that built every conversation without a failure.

        Returns:
            True when the memory is there (adopted now, or built already); False when a saved
            memory is missing, unreadable, of another config or conversation: nothing is kept
            then, and :meth:`evaluate` builds as before.
        """
        construction = {k: v for k, v in self._merged(fields).items() if k != _RETRIEVAL}
        key = json.dumps(construction, sort_keys=True, default=str)
        if key in self._built:
            return True
        layers = self._saved_layers(construction, Path(folder), dataset)
        if layers is None:
            return False
        self._built[key] = _Built(workdir=None, layers=layers)
        self.adopted += 1
        return True

    def close(self) -> None:
        """Remove the built memories (a run's saved memory that was adopted stays where it is)."""
        for built in self._built.values():
            for layer in built.layers.values():
                layer.cleanup()
            if built.workdir is not None:
                shutil.rmtree(built.workdir, ignore_errors=True)
        self._built.clear()

    # -- internals ------------------------------------------------------------------------------
    def _merged(self, fields: Mapping[str, Any] | None) -> dict[str, Any]:
        fields = dict(fields or {})
        retrieval = {**self.base_fields.get(_RETRIEVAL, {}), **fields.get(_RETRIEVAL, {})}
        return {**self.base_fields, **fields, _RETRIEVAL: retrieval}

    def _score(self, merged: dict[str, Any], top_k: int) -> dict[str, bool]:
        from membase.layers import build_layer_config
        from smartcomment import tracing_enabled

        retrieval = build_layer_config(LAYER_TYPE, user_id="config-check", **merged).retrieval_config
        built = self._memory({k: v for k, v in merged.items() if k != _RETRIEVAL})
        hits: dict[str, bool] = {}
        with tracing_enabled(False):
            for q in self.questions:
                layer = built.layers[q.conversation]
                layer.manager.retrieval = retrieval
                hits[q.qa_id] = self.reaches(layer.retrieve(q.question, k=top_k), q)
        return hits

    def _memory(self, construction: dict[str, Any]) -> _Built:
        key = json.dumps(construction, sort_keys=True, default=str)
        built = self._built.get(key)
        if built is None:
            started = time.perf_counter()
            built = self._build(construction)
            self.build_seconds += time.perf_counter() - started
            self.builds += 1
            self._built[key] = built
        return built

    def _build(self, construction: dict[str, Any]) -> _Built:
        from tqdm.auto import tqdm

        from membase.layers import build_layer_config
        from membase.layers.evermemos.layer import EverMemOSLayer
        from smartcomment import tracing_enabled

        asked = {q.conversation for q in self.questions}
        built = _Built(workdir=Path(tempfile.mkdtemp(prefix="evermemos_recall_")), layers={})
        counter = iter(range(1, 1 << 62))
        with tracing_enabled(False):
            for traj, _ in self.dataset:
                if traj.id not in asked:
                    continue
                config = build_layer_config(LAYER_TYPE, user_id=traj.id, save_dir=str(built.workdir / "memory"),
                                            **construction)
                layer = EverMemOSLayer(config, id_factory=lambda: f"unit-{next(counter)}")
                for message in tqdm(traj.messages, desc=f"build {traj.id}", unit="msg", leave=False,
                                    disable=not self.show_progress):
                    layer.add_message(message)
                layer.flush()
                built.layers[traj.id] = layer
        return built


    def _saved_layers(self, construction: dict[str, Any], folder: Path, dataset: Any) -> dict[str, Any] | None:
        """The scored conversations' layers saved under ``folder``, loaded; None when one cannot serve."""
        ours = {traj.id: traj for traj, _ in self.dataset}
        theirs = {traj.id: traj for traj, _ in dataset}
        layers: dict[str, Any] = {}
        for conversation in dict.fromkeys(q.conversation for q in self.questions):
            saved = theirs.get(conversation)
            layer = None
            if saved is not None and saved.messages == ours[conversation].messages:
                try:
                    layer = self._saved_layer(construction, conversation, folder / conversation)
                except Exception:  # noqa: BLE001 - any unreadable save falls back to a build
                    layer = None
            if layer is None:
                for loaded in layers.values():
                    loaded.cleanup()
                return None
            layers[conversation] = layer
        return layers

    def _saved_layer(self, construction: dict[str, Any], user_id: str, save_dir: Path) -> Any:
        """The layer saved in ``save_dir``, loaded, if its construction config is ``construction`` (else None)."""
        from membase.layers import build_layer_config
        from membase.layers.base import CONFIG_FILENAME, redact_secrets
        from membase.layers.evermemos.layer import EverMemOSLayer

        path = save_dir / CONFIG_FILENAME
        if not path.is_file():
            return None
        stored = json.loads(path.read_text(encoding="utf-8"))
        config = build_layer_config(LAYER_TYPE, user_id=user_id, save_dir=str(save_dir), **construction)
        expected = redact_secrets({"layer_type": LAYER_TYPE, **config.model_dump(mode="json")})
        ignored = ("save_dir", _RETRIEVAL)  # the retrieval config is set per evaluation
        if not isinstance(stored, dict) or {k: v for k, v in expected.items() if k not in ignored} != {
                k: v for k, v in stored.items() if k not in ignored}:
            return None
        layer = EverMemOSLayer(config)
        if not layer.load_memory(user_id):
            layer.cleanup()
            return None
        return layer


class EverMemOSRoundStep(ParameterRoundStep):
    """The parameter loop's round step for EverMemOS: a traced run's miss is judged by the fake's sentences."""

    def _failed_cases(self, run: Any, scored: dict[str, Any]) -> tuple[list[Any], dict[str, Any], dict[str, bool]]:
        # The rounds run on the objective's conversations: its questions carry the fake's sentences.
        ours = {q.qa_id: q for q in self.objective.questions}
        return super()._failed_cases(run, {qa_id: ours[qa_id] for qa_id in scored if qa_id in ours})
