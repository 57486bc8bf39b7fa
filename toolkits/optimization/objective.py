r"""An objective that needs no model: context recall at a token budget.

For each non-adversarial LoCoMo question whose evidence resolves to messages, the question is a
*hit* when every one of its evidence messages reaches the context handed to the answering step,
with that context cut to a fixed token budget:

* the context is membase's default one (``### Memory i:`` blocks of the retrieved memories, in
  rank order; :func:`membase.runners.evaluation.default_context_builder`) cut after ``budget``
  tokens (:func:`membase.utils.tokens.truncate_to_tokens`), so "retrieve everything" cannot win;
* an evidence message reaches it when its stored text (``Speaker <name> (role: user) says:
  <text>\nTimestamp: <time>``, what NaiveRAG and Long-Context store) appears whole in it.

Recall is the fraction of hits: *micro* over all questions, *macro* the mean over conversations.
Only layers that store message text verbatim (NaiveRAG, Long-Context) can be scored this way.

The layers are run for real (MiniLM + qdrant for NaiveRAG) with tracing off. One build per
distinct construction config: the layer retrieves ``k_max`` memories per question once, and the
hit of every ``top_k`` ≤ ``k_max`` is read off that ranking (qdrant's local search is exact, so the
first k of the top ``k_max`` are the top k). Hit tables are cached in memory and, with a cache
folder, on disk; embeddings go through :class:`toolkits._embeddings.CachedEmbedder`.

A run that already built and saved a config's memory (the parameter loop's traced run) can hand
it over instead of a build: :meth:`ContextRecallObjective.adopt_saved_memory` loads each
conversation's saved layer and fills the config's hit table from it, the same way a build does.
"""

from __future__ import annotations

import hashlib
import json
import shutil
import tempfile
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

__all__ = [
    "RECALL_LAYERS",
    "BudgetedContextBuilder",
    "ContextRecallObjective",
    "RecallQuestion",
    "RecallResult",
    "evidence_reaches",
    "recall_questions",
]

RECALL_LAYERS = ("NaiveRAG", "Long-Context")
DEFAULT_K_MAX = 50
_CACHE_VERSION = 1


@dataclass(frozen=True)
class RecallQuestion:
    """One scored question."""

    qa_id: str
    conversation: str
    question: str
    question_type: str
    evidence_ids: tuple[str, ...]
    """Message ids (``U1:D1:3``): also the message nodes' names in the traced graph."""
    evidence_texts: tuple[str, ...]
    """The stored text of each evidence message."""
    golden_answers: tuple[str, ...] = ()


def recall_questions(dataset: Any) -> tuple[list[RecallQuestion], dict[str, int]]:
    """The scored questions of a dataset and the counts of those left out.

    Returns:
        ``(questions, skipped)``: ``skipped`` counts ``adversarial`` questions and questions whose
        evidence is empty or names a message the conversation lacks.
    """
    from membase.layers.long_context import format_message

    questions: list[RecallQuestion] = []
    skipped = {"adversarial": 0, "no_evidence": 0, "unresolved_evidence": 0}
    for traj, qas in dataset:
        texts = {m.id: format_message(m) for m in traj.messages}
        for qa in qas:
            if qa.metadata.get("question_type") == "adversarial":
                skipped["adversarial"] += 1
                continue
            evidence = [str(e) for e in qa.metadata.get("evidence") or []]
            if not evidence:
                skipped["no_evidence"] += 1
                continue
            if any(e not in texts for e in evidence):
                skipped["unresolved_evidence"] += 1
                continue
            questions.append(RecallQuestion(
                qa_id=qa.id, conversation=traj.id, question=qa.question,
                question_type=str(qa.metadata.get("question_type", "unknown")),
                evidence_ids=tuple(evidence), evidence_texts=tuple(texts[e] for e in evidence),
                golden_answers=tuple(qa.golden_answers),
            ))
    return questions, skipped


class BudgetedContextBuilder:
    """membase's default context cut after ``budget`` tokens (a context builder for the evaluation runner)."""

    def __init__(self, budget: int) -> None:
        if budget < 1:
            raise ValueError(f"the context budget must be >= 1 token, got {budget}")
        self.budget = budget

    def __call__(self, memories: Sequence[Any]) -> str:
        """The default context of ``memories``, cut to the token budget."""
        from membase.runners.evaluation import default_context_builder
        from membase.utils.tokens import truncate_to_tokens

        return truncate_to_tokens(default_context_builder(list(memories)), self.budget)

    def __repr__(self) -> str:
        return f"BudgetedContextBuilder(budget={self.budget}): default_context_builder cut after {self.budget} tokens"


def evidence_reaches(context: str, question: RecallQuestion) -> bool:
    """Whether every evidence message of ``question`` appears whole in ``context``."""
    return all(text in context for text in question.evidence_texts)


def hits_by_k(memories: Sequence[Any], question: RecallQuestion, budget: int, k_max: int) -> list[bool]:
    """``[hit with top_k = 1, …, k_max]`` for one ranked memory list."""
    from membase.runners.evaluation import default_context_builder
    from membase.utils.tokens import truncate_to_tokens

    out: list[bool] = []
    settled: bool | None = None
    for k in range(1, k_max + 1):
        if settled is None and k <= len(memories):
            full = default_context_builder(list(memories[:k]))
            context = truncate_to_tokens(full, budget)
            hit = evidence_reaches(context, question)
            if len(context) < len(full):  # the budget is reached: more memories change nothing
                settled = hit
            out.append(hit)
        else:
            out.append(settled if settled is not None else (out[-1] if out else False))
    return out


@dataclass
class RecallResult:
    """Context recall of one configuration on one set of questions."""

    hits: dict[str, bool]
    """qa id -> hit."""
    questions: list[RecallQuestion] = field(repr=False, default_factory=list)

    @property
    def n(self) -> int:
        """Scored questions."""
        return len(self.hits)

    @property
    def micro(self) -> float:
        """Fraction of questions whose evidence reaches the context."""
        return sum(self.hits.values()) / len(self.hits) if self.hits else 0.0

    def _group_means(self, key: str) -> dict[str, float]:
        groups: dict[str, list[bool]] = {}
        for q in self.questions:
            if q.qa_id in self.hits:
                groups.setdefault(getattr(q, key), []).append(self.hits[q.qa_id])
        return {g: sum(v) / len(v) for g, v in sorted(groups.items())}

    @property
    def by_conversation(self) -> dict[str, float]:
        """Recall per conversation."""
        return self._group_means("conversation")

    @property
    def by_question_type(self) -> dict[str, float]:
        """Recall per LoCoMo question type."""
        return self._group_means("question_type")

    @property
    def macro(self) -> float:
        """Mean over conversations of their recall."""
        per = self.by_conversation
        return sum(per.values()) / len(per) if per else 0.0

    def summary(self) -> dict[str, Any]:
        """JSON-ready numbers (no per-question outcomes)."""
        return {"micro": self.micro, "macro": self.macro, "n_questions": self.n,
                "by_conversation": self.by_conversation, "by_question_type": self.by_question_type}


class ContextRecallObjective:
    """Context recall at a token budget of a layer config on a fixed set of conversations.

    Args:
        dataset: the conversations and their questions (a membase ``MemoryDataset``).
        layer_type: ``NaiveRAG`` or ``Long-Context``.
        base_fields: the layer config fields every evaluation starts from (embedder settings ...).
        budget: context budget in tokens.
        cache_dir: folder for the embedding cache and the hit tables (None: in memory only).
        k_max: largest ``top_k`` that can be asked for.
        embedder: the NaiveRAG embedder to use (default: built from the config, wrapped in a cache).
        show_progress: a progress bar per build.
        cache_tables: keep hit tables on disk too (False: embeddings only, every object builds anew).

    Raises:
        ValueError: a layer type that does not store message text, or no question to score.
    """

    def __init__(
        self,
        dataset: Any,
        layer_type: str,
        base_fields: Mapping[str, Any] | None = None,
        *,
        budget: int = 1000,
        cache_dir: str | Path | None = None,
        k_max: int = DEFAULT_K_MAX,
        embedder: Any = None,
        show_progress: bool = False,
        cache_tables: bool = True,
    ) -> None:
        if layer_type not in RECALL_LAYERS:
            raise ValueError(
                f"context recall needs a layer that stores the message text verbatim ({', '.join(RECALL_LAYERS)}); "
                f"got {layer_type!r}"
            )
        self.dataset = dataset
        self.layer_type = layer_type
        self.base_fields = dict(base_fields or {})
        self.budget = budget
        self.k_max = k_max
        self.cache_dir = Path(cache_dir) if cache_dir is not None else None
        self.show_progress = show_progress
        self.cache_tables = cache_tables
        self.questions, self.skipped = recall_questions(dataset)
        if not self.questions:
            raise ValueError("no question to score: every question is adversarial or lacks resolvable evidence")
        self._embedder = embedder
        self._tables: dict[str, dict[str, list[bool]]] = {}
        self.builds = 0
        """Layer builds run by this object (cache misses)."""
        self.build_seconds = 0.0
        self.adopted = 0
        """Hit tables filled from memories another run built and saved (:meth:`adopt_saved_memory`)."""

    # -- public ---------------------------------------------------------------------------------
    def evaluate(self, fields: Mapping[str, Any] | None = None, top_k: int = 10) -> RecallResult:
        """Recall of the config ``base_fields`` updated by ``fields``, retrieving ``top_k`` memories.

        Raises:
            ValueError: ``top_k`` outside 1 … ``k_max``.
            membase.exceptions.ConfigError: an invalid layer config.
        """
        if not 1 <= top_k <= self.k_max:
            raise ValueError(f"top_k must be within 1..{self.k_max}, got {top_k}")
        table = self.hit_table(fields)
        return RecallResult(hits={q.qa_id: table[q.qa_id][top_k - 1] for q in self.questions},
                            questions=self.questions)

    def hit_table(self, fields: Mapping[str, Any] | None = None) -> dict[str, list[bool]]:
        """qa id -> hits for top_k = 1 … k_max, built once per distinct config."""
        merged = {**self.base_fields, **dict(fields or {})}
        key = self._key(merged)
        table = self._tables.get(key)
        if table is None:
            table = self._read_cached(key)
            if table is None:
                start = time.perf_counter()
                table = self._build(merged)
                self.build_seconds += time.perf_counter() - start
                self.builds += 1
                self._write_cached(key, table)
            self._tables[key] = table
        return table

    def adopt_saved_memory(self, fields: Mapping[str, Any] | None, folder: str | Path, dataset: Any) -> bool:
        """Fill the hit table of a config from the memory a run already built and saved, with no build.

        ``folder`` holds one saved layer per conversation (``<folder>/<conversation id>/``, as
        membase's construction runner writes them) built from ``dataset`` with the config
        ``base_fields`` updated by ``fields``. Each scored conversation's layer is loaded with its
        ``load_memory`` and retrieves ``k_max`` memories per question with tracing off, and the
        hits are computed as a build computes them, so a later :meth:`evaluate` of that config is
        a cache hit. Only the caller knows the save is complete (no failed message): call this for
        a run that built every conversation without a failure.

        Returns:
            True when the table is there (adopted now, or already cached); False when a saved
            memory is missing, unreadable, of another layer, config or conversation: nothing is
            stored then, and :meth:`evaluate` builds the config as before.
        """
        merged = {**self.base_fields, **dict(fields or {})}
        key = self._key(merged)
        if key in self._tables:
            return True
        cached = self._read_cached(key)
        if cached is None:
            cached = self._table_from_saved(merged, Path(folder), dataset)
            if cached is None:
                return False
            self.adopted += 1
            self._write_cached(key, cached)
        self._tables[key] = cached
        return True

    def close(self) -> None:
        """Close the embedding cache."""
        close = getattr(self._embedder, "close", None)
        if callable(close):
            close()

    # -- building -------------------------------------------------------------------------------
    @property
    def embedder(self) -> Any:
        """The embedder NaiveRAG builds use (cached on disk when there is a cache folder)."""
        if self._embedder is None:
            from membase.clients.embeddings import build_embedder
            from membase.layers import build_layer_config
            from toolkits._embeddings import CachedEmbedder

            cfg = build_layer_config("NaiveRAG", user_id="config-check", **self.base_fields)
            inner = build_embedder(cfg.retriever_name_or_path, dim=cfg.retriever_dim, **cfg.embedding_kwargs)
            cache = self.cache_dir / "embeddings" if self.cache_dir is not None else None
            self._embedder = CachedEmbedder(inner, cache, batch_size=4096)
        return self._embedder

    def _layer(self, fields: dict[str, Any], user_id: str, save_dir: str) -> Any:
        from membase.layers import build_layer_config
        from membase.layers.long_context import LongContextLayer
        from membase.layers.naive_rag import NaiveRAGLayer

        fields = dict(fields)
        if self.layer_type == "NaiveRAG":
            if fields.get("vector_store", "local") == "local":
                fields["vector_store"] = "memory"  # same qdrant engine, no folder to write
            config = build_layer_config("NaiveRAG", user_id=user_id, save_dir=save_dir, **fields)
            return NaiveRAGLayer(config, embedder=self.embedder)
        config = build_layer_config("Long-Context", user_id=user_id, save_dir=save_dir, **fields)
        return LongContextLayer(config)

    def _by_conversation(self) -> dict[str, list[RecallQuestion]]:
        by_conversation: dict[str, list[RecallQuestion]] = {}
        for q in self.questions:
            by_conversation.setdefault(q.conversation, []).append(q)
        return by_conversation

    def _score_layer(self, layer: Any, questions: Sequence[RecallQuestion], table: dict[str, list[bool]]) -> None:
        """Hits of ``questions`` for every ``top_k`` from one built layer (tracing must be off)."""
        layer.prefetch_queries([q.question for q in questions])
        for q in questions:
            memories = layer.retrieve(q.question, k=self.k_max)
            table[q.qa_id] = hits_by_k(memories, q, self.budget, self.k_max)

    def _build(self, fields: dict[str, Any]) -> dict[str, list[bool]]:
        from tqdm.auto import tqdm

        from smartcomment import tracing_enabled

        by_conversation = self._by_conversation()
        table: dict[str, list[bool]] = {}
        workdir = Path(tempfile.mkdtemp(prefix="context_recall_"))
        try:
            with tracing_enabled(False):
                for traj, _ in self.dataset:
                    questions = by_conversation.get(traj.id)
                    if not questions:
                        continue
                    layer = self._layer(fields, traj.id, str(workdir / "memory"))
                    try:
                        self._embed_ahead(layer, traj.messages, questions)
                        for message in tqdm(traj.messages, desc=f"build {traj.id}", unit="msg", leave=False,
                                            disable=not self.show_progress):
                            layer.add_message(message)
                        layer.flush()
                        self._score_layer(layer, questions, table)
                    finally:
                        layer.cleanup()
        finally:
            shutil.rmtree(workdir, ignore_errors=True)
        return table

    # -- adopting a saved memory ------------------------------------------------------------------
    def _table_from_saved(self, merged: dict[str, Any], folder: Path, dataset: Any) -> dict[str, list[bool]] | None:
        """The hit table of ``merged`` from the layers saved under ``folder``; None when one cannot serve."""
        from smartcomment import tracing_enabled

        ours = {traj.id: traj for traj, _ in self.dataset}
        theirs = {traj.id: traj for traj, _ in dataset}
        table: dict[str, list[bool]] = {}
        with tracing_enabled(False):
            for conversation, questions in self._by_conversation().items():
                saved = theirs.get(conversation)
                if saved is None or saved.messages != ours[conversation].messages:
                    return None  # built from other messages: another memory
                try:
                    layer = self._saved_layer(merged, conversation, folder / conversation)
                except Exception:  # noqa: BLE001 - any unreadable save falls back to a build
                    return None
                if layer is None:
                    return None
                try:
                    self._score_layer(layer, questions, table)
                except Exception:  # noqa: BLE001 - a save that cannot answer falls back to a build
                    return None
                finally:
                    layer.cleanup()
        return table

    def _saved_layer(self, merged: dict[str, Any], user_id: str, save_dir: Path) -> Any:
        """The layer saved in ``save_dir``, loaded, if it was built with ``merged`` (else None).

        The saved ``config.json`` must equal the config ``merged`` makes, but for the folder and
        the NaiveRAG store kind (``local`` and ``memory`` hold the same documents and vectors).
        """
        from membase.layers import build_layer_config
        from membase.layers.base import CONFIG_FILENAME, redact_secrets
        from membase.layers.long_context import LongContextLayer
        from membase.layers.naive_rag import NaiveRAGLayer

        path = save_dir / CONFIG_FILENAME
        if not path.is_file():
            return None
        stored = json.loads(path.read_text(encoding="utf-8"))
        if not isinstance(stored, dict) or stored.get("layer_type") != self.layer_type:
            return None
        fields = dict(merged)
        if self.layer_type == "NaiveRAG":
            kinds = ("local", "memory")
            if stored.get("vector_store") not in kinds or fields.get("vector_store", "local") not in kinds:
                return None  # a server collection may have changed since
            fields["vector_store"] = stored["vector_store"]
        config = build_layer_config(self.layer_type, user_id=user_id, save_dir=str(save_dir), **fields)
        expected = redact_secrets({"layer_type": self.layer_type, **config.model_dump(mode="json")})
        if {k: v for k, v in expected.items() if k != "save_dir"} != {k: v for k, v in stored.items()
                                                                       if k != "save_dir"}:
            return None
        layer = NaiveRAGLayer(config, embedder=self.embedder) if self.layer_type == "NaiveRAG" else LongContextLayer(
            config)
        try:
            loaded = layer.load_memory(user_id)
        except BaseException:
            layer.cleanup()
            raise
        if not loaded:
            layer.cleanup()
            return None
        return layer

    def _embed_ahead(self, layer: Any, messages: Sequence[Any], questions: Sequence[RecallQuestion]) -> None:
        """Embed the conversation's documents and questions in one call before the build.

        The store embeds 64 documents at a time; one large call lets sentence-transformers sort
        every text by length (less padding), and the build then reads the vectors from the cache.
        The documents come from a copy of the layer's message buffer, so nothing is stored twice.
        """
        if self.layer_type != "NaiveRAG":
            return
        from membase.layers.long_context import format_message
        from membase.layers.naive_rag import NaiveRAGLayer

        dry = NaiveRAGLayer(layer.config, embedder=self.embedder)
        docs = [doc for m in messages if (doc := dry._buffer_and_get_doc(format_message(m))) is not None]
        last = dry._flush_buffer()
        if last is not None:
            docs.append(last)
        self.embedder.embed(list(dict.fromkeys([*docs, *(q.question for q in questions)])))

    # -- cache ----------------------------------------------------------------------------------
    def _key(self, fields: Mapping[str, Any]) -> str:
        from toolkits._embeddings import embedder_cache_key

        embedder = embedder_cache_key(self.embedder) if self.layer_type == "NaiveRAG" else None
        conversations = hashlib.sha256()
        for traj, _ in self.dataset:
            conversations.update(traj.id.encode())
            for message in traj.messages:
                conversations.update(b"\x00" + message.id.encode() + b"\x00" + message.content.encode())
        identity = {
            "version": _CACHE_VERSION, "layer_type": self.layer_type, "fields": dict(fields),
            "budget": self.budget, "k_max": self.k_max, "embedder": embedder,
            "conversations": conversations.hexdigest(),
            "questions": sorted((q.qa_id, q.question, q.evidence_ids) for q in self.questions),
        }
        return hashlib.sha256(json.dumps(identity, sort_keys=True, default=str).encode()).hexdigest()[:24]

    def _cache_file(self, key: str) -> Path | None:
        if self.cache_dir is None or not self.cache_tables:
            return None
        return self.cache_dir / "context_recall" / f"{key}.json"

    def _read_cached(self, key: str) -> dict[str, list[bool]] | None:
        path = self._cache_file(key)
        if path is None or not path.is_file():
            return None
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, json.JSONDecodeError):
            return None  # a damaged entry is rebuilt
        table = data.get("hits") if isinstance(data, dict) else None
        if not isinstance(table, dict) or any(q.qa_id not in table for q in self.questions):
            return None
        return {k: [bool(x) for x in v] for k, v in table.items()}

    def _write_cached(self, key: str, table: dict[str, list[bool]]) -> None:
        path = self._cache_file(key)
        if path is None:
            return
        from membase.utils.io import atomic_write_json

        atomic_write_json(path, {"hits": {k: [int(x) for x in v] for k, v in table.items()}}, indent=None)
