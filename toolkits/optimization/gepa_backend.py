"""``--optimizer gepa``: the memory configuration as a GEPA candidate, MemTrace attributions as reflection.

`GEPA <https://pypi.org/project/gepa/>`_ keeps a Pareto pool of candidates, proposes a new text
for one component of a candidate from a reflective dataset, accepts it only if it does better on
a minibatch, and merges candidates. All of that comes from the library; this module supplies:

* **the candidate**: one text component per target (prompts as they are, parameters as JSON);
  the seed candidate holds the starting values — a target the config leaves unset is read from
  a traced *seed run* of the first training conversation (mem0's run date removed) and stays
  unset in the bundle while the candidate keeps that text. An answering-step target the config
  leaves unset (``answer_context_budget``: no cut) is no component: its seed would be ``null``
  and a proposed number would start cutting every context
  (:func:`~toolkits.optimization.parameters.unset_answer_parameters`);
* **evaluate**: run the memory system with the candidate's bundle on a minibatch of training
  conversations (one data instance = one conversation; its score = its mean ``llm_judge``); with
  traces, attribute the failures (:class:`toolkits.runner.MemTraceRunner`) and group them by
  target (:func:`toolkits.optimization.grouping.group_attributions`). With ``workers`` > 1 in the
  settings the minibatch's conversations not yet run for the candidate are built together in
  worker processes (one run folder ``runs/<n>-conversations-<i>-<j>``), each scored and attributed
  as a run of its own would be. A candidate whose component breaks its target's contract scores 0
  without running;
* **the reflective dataset** of a component: the attributions grouped onto it (question, answer,
  gold, error type, blamed operation, reason, and the replay verdict when an attribution has one);
* **the component selector**: the component with the most attributed failures on the minibatch
  (ties in target order); none attributed → round robin.

Files: ``<dir>/gepa/`` (GEPA's own run folder and the seed run), ``<dir>/gepa/evaluations.jsonl``
(one line per conversation evaluated: candidate digest, score, failures by component),
``<dir>/gepa/selections.jsonl`` (the component picked per iteration and why),
``<dir>/gepa/gepa.log`` (GEPA's own iteration log: what it accepted and why), and
``<dir>/gepa_summary.json`` (every candidate, its parents and scores, the best one).

**Resume.** A killed run resumes where it stopped when the same command is run again. GEPA keeps
its own state in ``<dir>/gepa/run/gepa_state.bin`` (saved at the start of every iteration: the
pool, the scores, the budget spent) and loads it; what the library does not keep is ours:
``<dir>/gepa/evaluation_cache.jsonl`` journals every memory-system run (candidate digest,
conversation, traced or not, score, attributions), so no conversation is built again for a
candidate it was already built for, and ``<dir>/gepa/seed_candidate.json`` keeps the seed
candidate (no second seed run). The iteration that was running when the run stopped is run again;
its finished memory-system runs come from the journal. GEPA's random generator is not part of its
state: after a resume the minibatches and the parent choices may differ from an uninterrupted run.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from membase.utils.io import atomic_write_json
from toolkits.optimization.bundle import MemoryConfigBundle
from toolkits.optimization.pipeline import PipelineSettings, run_pipeline
from toolkits.optimization.records import decode_stored_text, strip_run_dates, unquote
from toolkits.optimization.targets import Target

__all__ = ["GEPA_FOLDER", "GEPA_SUMMARY_FILENAME", "AttributionGuidedSelector", "MemoryGEPAAdapter",
           "resumable_gepa_run", "run_gepa"]

GEPA_SUMMARY_FILENAME = "gepa_summary.json"
GEPA_FOLDER = "gepa"
_EVALUATION_JOURNAL = "evaluation_cache.jsonl"
_SEED_FILENAME = "seed_candidate.json"
_STATE = ("run", "gepa_state.bin")


def _append_jsonl(path: Path, record: Mapping[str, Any]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("a", encoding="utf-8") as handle:
        handle.write(json.dumps(record, ensure_ascii=False, default=str) + "\n")
        handle.flush()


def _read_jsonl(path: Path) -> list[dict[str, Any]]:
    """The whole JSON object lines of a journal (a line torn by a kill is skipped)."""
    if not path.is_file():
        return []
    records = []
    for line in path.read_text(encoding="utf-8").splitlines():
        try:
            record = json.loads(line)
        except ValueError:
            continue
        if isinstance(record, dict):
            records.append(record)
    return records


def _last_run_number(name: str) -> int:
    """``0003-conversation-1`` → 3; ``0003-conversations-1-0`` (two conversations run together) → 4."""
    number, _, rest = name.partition("-")
    if not number.isdigit():
        return 0
    count = len(rest.split("-")) - 1 if rest.startswith("conversations-") else 1
    return int(number) + count - 1


def resumable_gepa_run(root: Path) -> int | None:
    """The memory-system runs journaled by an earlier GEPA run in ``root`` (0 when only GEPA's state
    is there), or None when it holds neither (nothing to resume)."""
    folder = Path(root) / GEPA_FOLDER
    journal = folder / _EVALUATION_JOURNAL
    if not folder.joinpath(*_STATE).is_file() and not journal.is_file():
        return None
    return len(_read_jsonl(journal))


@dataclass(kw_only=True)
class MemoryGEPAAdapter:
    """The ``GEPAAdapter`` of a memory system (see the module docstring)."""

    initial: MemoryConfigBundle
    targets: list[Target]
    seed_texts: dict[str, str]
    """Component → the text of the seed candidate."""
    unset_fields: set[str]
    """Fields the initial config leaves to the layer's default (kept unset while unchanged)."""
    dataset: Any
    """The training conversations (``MemoryDataset``); a data instance is a position in it."""
    settings: PipelineSettings
    attribution: Any
    """A :class:`toolkits.optimization.loop.AttributionSettings`."""
    folder: Path
    metric: str = "llm_judge"
    propose_new_texts: Any = None
    """None: GEPA's own reflective proposer writes the new texts (the library's, not ours)."""
    _cache: dict[tuple[str, int, bool], tuple[float, dict[str, Any]]] = field(default_factory=dict)
    _runs: int = 0
    reused: int = 0
    """Memory-system runs restored from the journal of an interrupted run."""

    def restore(self) -> None:
        """Load the journal of an interrupted run (see the module docstring); run folders keep counting."""
        for record in _read_jsonl(self.folder / _EVALUATION_JOURNAL):
            try:
                key = (str(record["digest"]), int(record["conversation"]), bool(record["traced"]))
                self._cache[key] = (float(record["score"]), dict(record["trace"]))
            except (KeyError, TypeError, ValueError):
                continue  # not a line this module wrote: that run is made again
        self.reused = len(self._cache)
        runs = self.folder / "runs"
        self._runs = max((_last_run_number(p.name) for p in runs.iterdir()), default=0) if runs.is_dir() else 0

    # -- candidate <-> bundle -----------------------------------------------------------------------
    def bundle_for(self, candidate: Mapping[str, str]) -> tuple[MemoryConfigBundle | None, list[str]]:
        """The bundle of a candidate and the contract problems of its components (bundle None if any)."""
        updates: dict[str, Any] = {}
        problems: list[str] = []
        for target in self.targets:
            text = candidate.get(target.field, self.seed_texts[target.field])
            if target.field in self.unset_fields and text == self.seed_texts[target.field]:
                continue
            value: Any = text
            if target.kind == "parameter":
                try:
                    value = json.loads(text)
                except ValueError:
                    problems.append(f"{target.field}: {text!r} is not a JSON value")
                    continue
            problems += [f"{target.field}: {p}" for p in target.problems(value)]
            updates[target.field] = value
        if problems:
            return None, problems
        try:
            return (self.initial.with_updates(updates) if updates else self.initial), []
        except (KeyError, ValueError) as exc:
            return None, [str(exc)]

    # -- GEPAAdapter ----------------------------------------------------------------------------------
    def evaluate(self, batch: list[int], candidate: dict[str, str], capture_traces: bool = False) -> Any:
        """Run the candidate on each conversation of ``batch``; per conversation its mean judge score."""
        from gepa import EvaluationBatch

        bundle, problems = self.bundle_for(candidate)
        if bundle is not None and self.settings.workers > 1:
            self._run_together(bundle, batch, capture_traces)
        outputs, scores, trajectories = [], [], []
        for index in batch:
            if bundle is None:
                score, trace = 0.0, {"conversation": index, "contract_problems": problems, "by_field": {}}
            else:
                score, trace = self._run(bundle, index, capture_traces)
            outputs.append({"conversation": index, "score": score})
            scores.append(score)
            trajectories.append(trace)
            _append_jsonl(self.folder / "evaluations.jsonl", {
                "candidate_digest": bundle.digest() if bundle is not None else None, "conversation": index,
                "traced": capture_traces, "score": score, "contract_problems": problems,
                "failures_by_component": {f: len(v) for f, v in trace.get("by_field", {}).items()},
            })
        return EvaluationBatch(outputs=outputs, scores=scores, trajectories=trajectories if capture_traces else None)

    def _run(self, bundle: MemoryConfigBundle, index: int, traced: bool) -> tuple[float, dict[str, Any]]:
        from toolkits.optimization.sampling import select

        key = (bundle.digest(), index, traced)
        if key not in self._cache:
            self._runs += 1
            folder = self.folder / "runs" / f"{self._runs:04d}-conversation-{index}"
            result = run_pipeline(bundle, select(self.dataset, [index]), folder,
                                  replace(self.settings, tracing=traced, show_progress=False), start_idx=0, end_idx=1)
            score = float(result.metrics.get(self.metric, 0.0))
            self._record(key, score, next(iter(result.graph_paths.values()), None) if traced else None)
        return self._cache[key]

    def _record(self, key: tuple[str, int, bool], score: float, graph_path: Path | None) -> None:
        trace: dict[str, Any] = {"conversation": key[1], "score": score, "by_field": {}}
        if graph_path is not None:
            trace.update(self._attributed(graph_path))
        self._cache[key] = (score, trace)
        _append_jsonl(self.folder / _EVALUATION_JOURNAL, {
            "digest": key[0], "conversation": key[1], "traced": key[2], "score": score, "trace": trace})

    def _run_together(self, bundle: MemoryConfigBundle, batch: Sequence[int], traced: bool) -> None:
        """The conversations of ``batch`` not run yet for ``bundle``, in one run on the settings' worker
        processes; each conversation's score and attributions are recorded as a run of its own would be."""
        from toolkits.optimization.pipeline import PipelineError, per_question
        from toolkits.optimization.sampling import select

        digest = bundle.digest()
        pending = list(dict.fromkeys(i for i in batch if (digest, i, traced) not in self._cache))
        if len(pending) < 2:
            return  # one conversation: _run, in this process
        folder = self.folder / "runs" / f"{self._runs + 1:04d}-conversations-{'-'.join(map(str, pending))}"
        self._runs += len(pending)
        result = run_pipeline(bundle, select(self.dataset, pending), folder,
                              replace(self.settings, tracing=traced, show_progress=False),
                              start_idx=0, end_idx=len(pending))
        failed = result.reports["construction"].get("users_failed") or {}
        if failed:  # as a run of that conversation alone would
            user, reason = next(iter(failed.items()))
            raise PipelineError(f"no memory could be built for {user} ({reason}); see {folder}")
        by_user: dict[str, list[float]] = {}
        for entry in per_question(result.outputs, [self.metric]).values():
            by_user.setdefault(str(entry["user_id"]), []).append(entry[self.metric])
        for index in pending:
            user = self.dataset.trajectories[index].id
            values = by_user.get(user, [])
            score = sum(values) / len(values) if values else 0.0
            self._record((digest, index, traced), score, result.graph_paths.get(user) if traced else None)

    def _attributed(self, graph_path: Path) -> dict[str, Any]:
        from smartcomment.runtime.network import ExecNetwork
        from toolkits.bench_utils import collect_failed_queries
        from toolkits.optimization.grouping import group_attributions
        from toolkits.optimization.loop import MEMORY_SYSTEMS, _attribute

        graph = ExecNetwork.from_file(graph_path)
        cases = collect_failed_queries(graph)
        attributions, failures, _ = _attribute(cases, graph, self.attribution, MEMORY_SYSTEMS.get(self.initial.backend))
        groups = group_attributions(attributions, graph, self.targets)
        return {"by_field": {f: [a.model_dump(mode="json") for a in items] for f, items in groups.by_field.items()},
                "unoptimizable": len(groups.unoptimizable), "attribution_failures": len(failures)}

    def make_reflective_dataset(self, candidate: dict[str, str], eval_batch: Any, components_to_update: list[str]
                                ) -> dict[str, list[dict[str, Any]]]:
        """Per component, the attributed failures of the minibatch that map to it."""
        out: dict[str, list[dict[str, Any]]] = {}
        for component in components_to_update:
            records = []
            for trace in eval_batch.trajectories or []:
                for problem in trace.get("contract_problems", []):
                    records.append({"Inputs": {}, "Generated Outputs": "", "Feedback": f"contract: {problem}"})
                for a in trace.get("by_field", {}).get(component, []):
                    replay = (a.get("metadata") or {}).get("replay")
                    verdict = ""
                    if isinstance(replay, dict) and "rescued" in replay:
                        verdict = (" Replaying the run with this operation repaired "
                                   + ("fixed the answer." if replay["rescued"] else "did not fix the answer."))
                    records.append({
                        "Inputs": {"question": unquote(a.get("query"))},
                        "Generated Outputs": unquote(a.get("prediction")),
                        "Feedback": (f"Wrong; the correct answer is {unquote(a.get('golden_answer'))}. MemTrace blames "
                                     f"{a.get('error_type')} at operation {a.get('op_id')}: {a.get('reason')}{verdict}"),
                    })
            if not records:
                records.append({"Inputs": {}, "Generated Outputs": "",
                                "Feedback": "No failure of this minibatch was attributed to this component."})
            out[component] = records
        return out


@dataclass(kw_only=True)
class AttributionGuidedSelector:
    """GEPA component selector: the component with the most attributed failures on the minibatch."""

    components: list[str]
    log_path: Path
    _turn: int = 0

    def __call__(self, state: Any, trajectories: list[Any], subsample_scores: list[float], candidate_idx: int,
                 candidate: dict[str, str]) -> list[str]:
        """Pick the component with the most attributed failures (round robin when none); logs the choice."""
        counts = {c: 0 for c in self.components}
        for trace in trajectories or []:
            for name, items in (trace or {}).get("by_field", {}).items():
                if name in counts:
                    counts[name] += len(items)
        if any(counts.values()):
            chosen = max(self.components, key=lambda c: (counts[c], -self.components.index(c)))
            why = "most attributed failures"
        else:
            chosen = self.components[self._turn % len(self.components)]
            why = "no attributed failure: round robin"
        self._turn += 1
        _append_jsonl(self.log_path, {"candidate_idx": candidate_idx, "chosen": chosen, "why": why,
                                      "failures_by_component": counts, "minibatch_scores": list(subsample_scores)})
        return [chosen]


@dataclass
class _FileLogger:
    """GEPA's iteration log goes to a file, not into the CLI's output."""

    path: Path

    def log(self, message: str, *args: Any, **_kw: Any) -> None:
        with self.path.open("a", encoding="utf-8") as handle:
            handle.write(" ".join(str(m) for m in (message, *args)) + "\n")


def reflection_model(spec: str, **options: Any) -> Callable[[Any], str]:
    """GEPA's reflection LM from ``--optimizer-model``: ``fake:<reply>`` or an OpenAI-compatible model."""
    if spec.startswith("fake:"):
        reply = spec.split(":", 1)[1]
        return lambda _prompt: reply
    from toolkits.optimization.pipeline import chat_model_from_spec

    model = chat_model_from_spec(spec, **options)

    def call(prompt: Any) -> str:
        messages = prompt if isinstance(prompt, list) else [{"role": "user", "content": str(prompt)}]
        return model.complete(messages, temperature=1.0).text

    call.credentials = getattr(model, "credentials", None)  # type: ignore[attr-defined]  # the endpoint check reads it
    return call


def _seed_texts(initial: MemoryConfigBundle, targets: Sequence[Target], dataset: Any, settings: PipelineSettings,
                folder: Path) -> tuple[dict[str, str], set[str]]:
    from smartcomment.runtime.network import ExecNetwork
    from toolkits.optimization.sampling import select

    texts: dict[str, str] = {}
    unset = {t.field for t in targets if initial.get(t.field) is None}
    graph = None
    if unset:
        result = run_pipeline(initial, select(dataset, [0]), folder / "seed_run",
                              replace(settings, tracing=True, show_progress=False), start_idx=0, end_idx=1)
        graph = ExecNetwork.from_file(next(iter(result.graph_paths.values()))) if result.graph_paths else None
    for target in targets:
        value = initial.get(target.field)
        if value is None and graph is not None:
            versions = graph.get_versions(target.variable)
            if versions:
                value = strip_run_dates(decode_stored_text(max(versions, key=lambda v: v.version).raw_value))
        if value is None and target.field == "top_k":
            value = settings.top_k
        texts[target.field] = value if isinstance(value, str) else json.dumps(value)
    return texts, unset


def _saved_seed_texts(initial: MemoryConfigBundle, targets: Sequence[Target], dataset: Any,
                      settings: PipelineSettings, folder: Path) -> tuple[dict[str, str], set[str]]:
    """The seed candidate, read from the interrupted run's ``seed_candidate.json`` when it was made
    for the same configuration and targets, else made (and saved) by :func:`_seed_texts`."""
    identity = {"initial_digest": initial.digest(), "targets": [t.field for t in targets], "top_k": settings.top_k}
    path = folder / _SEED_FILENAME
    try:
        saved = json.loads(path.read_text(encoding="utf-8"))
        if saved["identity"] == identity:
            return dict(saved["texts"]), set(saved["unset_fields"])
    except (OSError, ValueError, KeyError, TypeError):
        pass  # none yet, unreadable, or for another configuration: make it
    texts, unset = _seed_texts(initial, targets, dataset, settings, folder)
    atomic_write_json(path, {"identity": identity, "texts": texts, "unset_fields": sorted(unset)})
    return texts, unset


def run_gepa(
    *,
    initial: MemoryConfigBundle,
    targets: Sequence[Target],
    dataset: Any,
    settings: PipelineSettings,
    attribution: Any,
    reflection_lm: Callable[[Any], str],
    root: Path,
    max_metric_calls: int,
    seed: int,
    minibatch_size: int = 2,
) -> MemoryConfigBundle:
    """Optimize ``initial`` with GEPA on the training ``dataset``; returns the best candidate's bundle."""
    import gepa

    folder = root / GEPA_FOLDER
    folder.mkdir(parents=True, exist_ok=True)
    from toolkits.optimization.parameters import unset_answer_parameters

    left_out = set(unset_answer_parameters(targets, initial))
    targets = [t for t in targets if t.field not in left_out]
    texts, unset = _saved_seed_texts(initial, targets, dataset, settings, folder)
    adapter = MemoryGEPAAdapter(initial=initial, targets=targets, seed_texts=texts, unset_fields=unset, dataset=dataset,
                                settings=settings, attribution=attribution, folder=folder)
    adapter.restore()
    selector = AttributionGuidedSelector(components=[t.field for t in targets], log_path=folder / "selections.jsonl")
    selector._turn = len(_read_jsonl(selector.log_path))  # the round robin goes on where it stopped
    instances = list(range(len(dataset.trajectories)))
    result = gepa.optimize(
        seed_candidate=dict(texts), trainset=instances, valset=instances, adapter=adapter, reflection_lm=reflection_lm,
        module_selector=selector, max_metric_calls=max_metric_calls,
        reflection_minibatch_size=min(minibatch_size, len(instances)), use_merge=True, run_dir=str(folder / "run"),
        seed=seed, display_progress_bar=False, raise_on_exception=True, logger=_FileLogger(folder / "gepa.log"),
    )
    best, problems = adapter.bundle_for(result.best_candidate)
    if best is None:  # cannot happen for a candidate GEPA scored above 0, but never return a broken bundle
        best = initial
    atomic_write_json(root / GEPA_SUMMARY_FILENAME, {
        "components": [t.field for t in targets], "seed_candidate": texts, "unset_fields": sorted(unset),
        "candidates": result.candidates, "parents": result.parents, "val_aggregate_scores": result.val_aggregate_scores,
        "best_idx": result.best_idx, "best_candidate": result.best_candidate, "best_problems": problems,
        "total_metric_calls": result.total_metric_calls, "max_metric_calls": max_metric_calls,
        "memory_system_runs": adapter._runs, "reused_memory_system_runs": adapter.reused,
        "best_bundle": best.to_json_dict(),
    })
    return best
