"""Replay a run folder of ``python -m membase run``: again, and with one op repaired.

A replay re-executes a trajectory through membase's own runners (:func:`membase.interventions.run_traced`)
with the run's layer config, dataset slice and models; every model call whose request is
unchanged is answered by the run's call cache, so only calls downstream of a repair cost anything.

The **baseline** replay of a trajectory runs every question with no repair. It is the determinism
check (every prediction and judge verdict must repeat, with no new call) and it maps the run's
ops onto layer calls: the run's graph and the replay's list the same ops in the same order, and
the replay knows which call recorded each op, so ``op_id`` of the run → the call to repair.

A **case replay** re-runs the trajectory with one :class:`~membase.replay.repairs.Repair` and
answers only the case's question. A repair at query time needs no new construction: the
baseline's built layer answers the question again (construction is replayed only for repairs of
construction ops).
"""

from __future__ import annotations

import contextlib
import json
import shutil
import tempfile
import time
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from membase.exceptions import FATAL_ERRORS, MemBaseError
from membase.interventions import CallKey, Intervention, RunFailed, TracedRun, run_traced
from membase.replay.manifest import ReplayDataMissing, RunManifest, read_manifest
from membase.replay.repairs import VERBATIM_LAYERS, Evidence, RepairUnsupported, make_repair

__all__ = ["Baseline", "ReplayOutcome", "RunReplayer"]

Progress = Callable[[str], None]


@dataclass(kw_only=True)
class ReplayOutcome:
    """What one replay of one question gave."""

    status: str
    """``replayed``, ``unsupported`` (no repair of that kind here) or ``failed`` (the replay broke)."""
    stage: str | None = None
    rescued: bool | None = None
    """True: wrong before, right after the repair. None for response checks (never a repair claim)."""
    applied: bool = False
    """Whether the repair changed anything (False: the call already did what the repair asks)."""
    note: str = ""
    prediction: str | None = None
    judge_score: float | None = None
    judge_label: str | None = None
    answer_stable: bool | None = None
    """Response checks: the same context answered again gives the same answer."""
    new_calls: int = 0
    tokens: int = 0
    seconds: float = 0.0
    error: str | None = None

    def as_dict(self) -> dict[str, Any]:
        """JSON-ready, without empty fields."""
        return {k: v for k, v in asdict(self).items() if v is not None and v != ""}


@dataclass(kw_only=True)
class Baseline:
    """The unrepaired replay of one trajectory."""

    trajectory_id: str
    op_calls: dict[str, tuple[CallKey, str | None]] = field(default_factory=dict)
    """Op id of the *run's* graph → (the layer call that recorded it, the op name)."""
    ops: list[tuple[str, str | None]] = field(default_factory=list)
    """The run's ops (id, name), in execution order."""
    mismatches: list[dict[str, Any]] = field(default_factory=list)
    graph_divergence: str | None = None
    new_calls: int = 0
    system: System | None = None
    """The built system the baseline ran (its layer answers query-time replays)."""
    work: Path | None = None


@dataclass(kw_only=True)
class System:
    """What one run of a trajectory is made of: the layer, the models, the interventions that are part of it."""

    layer: Any
    qa_model: Any
    judge_model: Any
    intervention: Intervention | None = None
    """Interventions of the system itself (e.g. a benchmark's injected faults); a repair acts inside them."""
    reload: Callable[[], Any] | None = None
    """A new layer on the saved memory, for the search stage (None: the live layer answers)."""

    def with_repair(self, repair: Intervention | None) -> Intervention | None:
        """The system's interventions with ``repair`` innermost (it sees and fixes what they did)."""
        if repair is None or self.intervention is None:
            return repair or self.intervention
        from membase.interventions import InterventionSet

        return InterventionSet([self.intervention, repair])


class RunReplayer:
    """Replays the trajectories of one run folder (see the module docstring)."""

    def __init__(self, run_dir: str | Path, *, allow_new_calls: bool = True, answer_model: str | None = None,
                 manifest: RunManifest | None = None) -> None:
        """Read the run's manifest (``ReplayDataMissing`` when the folder has none).

        Args:
            run_dir: the ``--output-dir`` of ``python -m membase run``.
            allow_new_calls: False makes a call missing from the cache fail its replay.
            answer_model: a second answer model spec for response checks.
            manifest: use this manifest instead of the folder's (tests).
        """
        self.run_dir = Path(run_dir)
        self.manifest = manifest or read_manifest(self.run_dir)
        self.allow_new_calls = allow_new_calls
        self.answer_model = answer_model
        self._dataset: Any = None
        self._results: dict[tuple[str, str], dict[str, Any]] | None = None
        self._baselines: dict[str, Baseline] = {}
        self._exports: dict[str, dict[str, Any]] = {}
        self._scratch = Path(tempfile.mkdtemp(prefix="membase-replay-"))

    # -- the run's data -----------------------------------------------------------------------------
    def dataset(self) -> Any:
        """The run's dataset slice, selected as the run selected it."""
        if self._dataset is None:
            from membase.datasets import load_dataset

            m = self.manifest
            if not Path(m.dataset).is_file():
                raise ReplayDataMissing(f"the run's dataset {m.dataset!r} is gone; put it back to replay the run")
            data = load_dataset(m.dataset_type, m.dataset).select(m.start_idx, m.end_idx)
            if m.sample_size is not None:
                data = data.sample(size=m.sample_size, seed=m.seed)
            if m.max_messages is not None:
                data = data.first_messages(m.max_messages)
            self._dataset = data
        return self._dataset

    def trajectory_ids(self) -> list[str]:
        """Ids of the run's trajectories, in run order."""
        return [t.id for t in self.dataset().trajectories]

    def _trajectory(self, trajectory_id: str) -> tuple[Any, list[Any]]:
        data = self.dataset()
        for traj, qas in zip(data.trajectories, data.qa_pair_lists, strict=True):
            if traj.id == trajectory_id:
                skip = set(self.manifest.skip_question_types)
                return traj, [q for q in qas if q.metadata.get("question_type") not in skip]
        raise ReplayDataMissing(f"trajectory {trajectory_id!r} is not in the run's dataset slice")

    def question(self, trajectory_id: str, qa_id: str) -> Any:
        """The QA pair ``qa_id`` of a trajectory."""
        _, qas = self._trajectory(trajectory_id)
        for qa in qas:
            if qa.id == qa_id:
                return qa
        raise ReplayDataMissing(f"question {qa_id!r} is not among the run's questions of {trajectory_id!r}")

    def original(self, trajectory_id: str, qa_id: str) -> dict[str, Any] | None:
        """The run's evaluation row of a question (None when the run has none)."""
        if self._results is None:
            path = self.run_dir / self.manifest.results_file
            try:
                rows = json.loads(path.read_text(encoding="utf-8"))
            except (OSError, ValueError) as exc:
                raise ReplayDataMissing(f"the run's evaluation results {str(path)!r} cannot be read ({exc})") from None
            self._results = {(str(r.get("user_id")), str(r["qa_pair"]["id"])): r for r in rows}
        return self._results.get((trajectory_id, qa_id))

    # -- running --------------------------------------------------------------------------------------
    def _model(self, spec: str, *, cached: bool = True) -> Any:
        from membase.clients.cached import CachedChatModel
        from membase.clients.specs import resolve_chat_model

        m = self.manifest
        model = resolve_chat_model(spec, api_config=m.api_config, cache_dir=m.cache_path(self.run_dir) if cached else None,
                                   timeout=m.timeout, max_retries=m.max_retries)
        if not self.allow_new_calls and isinstance(model, CachedChatModel):
            model.inner = _CacheOnly(model.inner)
        return model

    def _layer(self, trajectory_id: str, work: Path) -> Any:
        from membase.clients.cached import layer_config_with_cache
        from membase.layers import build_layer

        config = self.manifest.memory_config
        cache = self.manifest.cache_path(self.run_dir)
        if cache is not None:
            config = layer_config_with_cache(self.manifest.layer_type, config, str(Path(cache) / "layer"))
        return build_layer(self.manifest.layer_type, user_id=trajectory_id, save_dir=str(work / "layer"), **config)

    def build_system(self, trajectory_id: str, work: Path, *, qa_model: Any = None) -> System:
        """The run's system for one trajectory: its layer and models (subclasses add what else it is made of)."""
        return System(layer=self._layer(trajectory_id, work), qa_model=qa_model or self._model(self.manifest.qa_model),
                      judge_model=self._model(self.manifest.judge_model),
                      reload=lambda: self._layer(trajectory_id, work))

    def _run(self, trajectory_id: str, qas: Sequence[Any], repair: Intervention | None, *,
             qa_model: Any = None, keep: bool = False) -> tuple[TracedRun, int, int, float, System, Path]:
        """One traced run; returns (run, new calls, tokens, seconds, the system, work folder)."""
        from membase.clients.guard import allow_model_requests
        from membase.clients.usage import CallMeter

        traj, _ = self._trajectory(trajectory_id)
        work = Path(tempfile.mkdtemp(prefix=f"{trajectory_id}-", dir=self._scratch))
        started = time.perf_counter()
        system = self.build_system(trajectory_id, work, qa_model=qa_model)
        try:
            with CallMeter() as meter, allow_model_requests(self.allow_new_calls), self.run_context():
                run = run_traced(system.layer, traj, qas, intervention=system.with_repair(repair),
                                 top_k=self.top_k, qa_model=system.qa_model, judge_model=system.judge_model,
                                 dataset_type=self.dataset_type, metrics=self._metrics(), work_dir=work,
                                 reload=system.reload)
            system.layer = run.layer
        except BaseException:
            _close(system.layer)
            shutil.rmtree(work, ignore_errors=True)
            raise
        if not keep:
            _close(system.layer)
            shutil.rmtree(work, ignore_errors=True)
        return run, meter.calls, meter.tokens, time.perf_counter() - started, system, work

    def run_context(self) -> contextlib.AbstractContextManager[Any]:
        """Entered around every traced run (subclasses seed what their system draws at random)."""
        return contextlib.nullcontext()

    @property
    def layer_type(self) -> str:
        """The memory layer's registry name."""
        return self.manifest.layer_type

    @property
    def top_k(self) -> int:
        """Retrieval depth of the run."""
        return self.manifest.top_k

    @property
    def dataset_type(self) -> str:
        """The judge prompt's dataset."""
        return self.manifest.dataset_type

    def _metrics(self) -> list[str]:
        return [m for m in self.manifest.metrics if m in ("f1", "bleu", "llm_judge")] or ["llm_judge"]

    # -- baseline and the determinism check ----------------------------------------------------------
    def baseline(self, trajectory_id: str) -> Baseline:
        """The unrepaired replay of a trajectory (computed once; keeps the built layer for query-time repairs)."""
        if trajectory_id in self._baselines:
            return self._baselines[trajectory_id]
        _, qas = self._trajectory(trajectory_id)
        run, calls, _, _, system, work = self._run(trajectory_id, qas, None, keep=True)
        base = Baseline(trajectory_id=trajectory_id, new_calls=calls, system=system, work=work)
        self._align(base, run)
        for row in run.results:
            qa_id = str(row["qa_pair"]["id"])
            before = self.original(trajectory_id, qa_id)
            if before is None:
                base.mismatches.append({"question": qa_id, "problem": "not in the run's results"})
                continue
            was, now = _verdict(before), _verdict(row)
            if was != now:
                base.mismatches.append({"question": qa_id, "run": was, "replay": now})
        self._baselines[trajectory_id] = base
        return base

    def _align(self, base: Baseline, run: TracedRun) -> None:
        try:
            ran = _ops(self.original_export(base.trajectory_id))
        except KeyError as exc:
            raise ReplayDataMissing(f"the run's graph of {base.trajectory_id!r} has no {exc}") from None
        replayed = _ops(run.export)
        call_of = {op_id: key for key, ops in run.calls.items() for op_id, _ in ops}
        base.ops = [(op_id, name) for op_id, name, _ in ran]
        for i, ((op_id, name, where), (new_id, new_name, new_where)) in enumerate(zip(ran, replayed, strict=False)):
            if name != new_name:
                base.graph_divergence = (f"op #{i}: the run recorded {name!r} ({where}), the replay {new_name!r} "
                                         f"({new_where}); the layer or a setting is not deterministic there")
                return
            key = call_of.get(new_id)
            if key is not None:
                base.op_calls[op_id] = (key, name)
        if len(ran) != len(replayed):
            base.graph_divergence = f"the run recorded {len(ran)} ops, the replay {len(replayed)}"

    def original_export(self, trajectory_id: str) -> dict[str, Any]:
        """The run's final graph of a trajectory (``graph_evaluation.json``) as exported JSON."""
        if trajectory_id not in self._exports:
            path = self.run_dir / "traced_data" / trajectory_id / "graph_evaluation.json"
            try:
                self._exports[trajectory_id] = json.loads(path.read_text(encoding="utf-8"))
            except (OSError, ValueError) as exc:
                raise ReplayDataMissing(f"the run's graph {str(path)!r} cannot be read ({exc})") from None
        return self._exports[trajectory_id]

    def check(self, *, progress: Progress | None = None) -> dict[str, Any]:
        """Replay every trajectory with no repair; the run is reproduced when nothing differs and no call was new."""
        trajectories, questions, mismatches, divergences, new_calls = 0, 0, [], [], 0
        for trajectory_id in self.trajectory_ids():
            try:
                base = self.baseline(trajectory_id)
            except (RunFailed, *FATAL_ERRORS) as exc:
                mismatches.append({"trajectory": trajectory_id, "problem": f"replay failed: {exc}"})
                continue
            trajectories += 1
            questions += len(self._trajectory(trajectory_id)[1])
            mismatches += [{"trajectory": trajectory_id, **m} for m in base.mismatches]
            if base.graph_divergence:
                divergences.append({"trajectory": trajectory_id, "divergence": base.graph_divergence})
            new_calls += base.new_calls
            if progress:
                progress(f"replay check {trajectory_id}: {len(base.mismatches)} differing answer(s), "
                         f"{base.new_calls} new call(s)")
        reproduced = not mismatches and not divergences and new_calls == 0
        report: dict[str, Any] = {"reproduced": reproduced, "trajectories": trajectories, "questions": questions,
                                  "mismatches": mismatches, "graph_divergences": divergences, "new_calls": new_calls}
        if not reproduced:
            report["hint"] = _hint(self.manifest, mismatches, divergences, new_calls)
        return report

    # -- case replays --------------------------------------------------------------------------------
    def locate(self, trajectory_id: str, op_id: str) -> tuple[CallKey, str | None] | None:
        """The layer call that recorded a run op, and the op's name (None: not a layer call's op)."""
        return self.baseline(trajectory_id).op_calls.get(op_id)

    def evidence(self, trajectory_id: str, qa_id: str) -> Evidence:
        """The source messages and golden answers of a question."""
        traj, _ = self._trajectory(trajectory_id)
        qa = self.question(trajectory_id, qa_id)
        wanted = [str(e) for e in qa.metadata.get("evidence", []) or []]
        by_id = {m.id: m for s in traj.sessions for m in s.messages}
        by_dia = {str(m.metadata.get("dia_id")): m for m in by_id.values() if m.metadata.get("dia_id")}
        messages = [by_id.get(e) or by_dia.get(e) for e in wanted]
        return Evidence(messages=[m for m in messages if m is not None], answers=list(qa.golden_answers),
                        verbatim=self.layer_type in VERBATIM_LAYERS)

    def repair(self, trajectory_id: str, qa_id: str, op_id: str, stage: str) -> ReplayOutcome:
        """Replay the question with the op repaired as its stage says; ``rescued`` when the answer turns right."""
        if stage == "response":
            return self.recheck_answer(trajectory_id, qa_id)
        try:
            located = self.locate(trajectory_id, op_id)
            if located is None:
                return ReplayOutcome(status="unsupported", stage=stage,
                                     note=f"op {op_id} was not recorded by a layer call (runner ops are not repaired)")
            key, name = located
            evidence = self.evidence(trajectory_id, qa_id)
            if not evidence.messages and stage != "retrieval":
                return ReplayOutcome(status="unsupported", stage=stage, note="the question names no evidence message")
            repair = make_repair(self.layer_type, key=key, stage=stage, op_name=name or "", evidence=evidence)
        except RepairUnsupported as exc:
            return ReplayOutcome(status="unsupported", stage=stage, note=str(exc))
        except ReplayDataMissing:
            raise
        except (RunFailed, MemBaseError) as exc:  # the unrepaired replay broke (e.g. offline, a call not cached)
            return ReplayOutcome(status="failed", stage=stage, error=f"the unrepaired replay failed: {exc}")
        outcome = self._replay_one(trajectory_id, qa_id, repair, query_time=key[0] == "retrieve")
        outcome.stage, outcome.applied, outcome.note = stage, repair.applied, repair.note or "the op already did its job"
        return outcome

    def recheck_answer(self, trajectory_id: str, qa_id: str) -> ReplayOutcome:
        """Answer the same context again (uncached, or with the second answer model); never a repair claim."""
        spec = self.answer_model or self.manifest.qa_model
        outcome = self._replay_one(trajectory_id, qa_id, None, query_time=True,
                                   qa_model=self._model(spec, cached=self.answer_model is not None))
        before = self.original(trajectory_id, qa_id) or {}
        outcome.stage, outcome.rescued = "response", None
        if outcome.status == "replayed":
            outcome.answer_stable = outcome.prediction == before.get("prediction")
            outcome.note = (f"answered again by {spec}" if self.answer_model else "the same model answered the same context again")
        return outcome

    def _replay_one(self, trajectory_id: str, qa_id: str, intervention: Intervention | None, *, query_time: bool,
                    qa_model: Any = None) -> ReplayOutcome:
        try:
            qa = self.question(trajectory_id, qa_id)
            if query_time:
                run, calls, tokens, seconds = self._query_again(trajectory_id, qa, intervention, qa_model)
            else:
                run, calls, tokens, seconds, *_ = self._run(trajectory_id, [qa], intervention, qa_model=qa_model)
        except (RunFailed, MemBaseError) as exc:
            return ReplayOutcome(status="failed", error=str(exc))
        row = next((r for r in run.results if str(r["qa_pair"]["id"]) == qa_id), None)
        if row is None:
            return ReplayOutcome(status="failed", error="the replay produced no answer for the question")
        score = _verdict(row)[1]
        before = self.original(trajectory_id, qa_id)
        was_right = before is not None and (_verdict(before)[1] or 0.0) >= 0.5
        right = score is not None and score >= 0.5
        return ReplayOutcome(status="replayed", rescued=(not was_right) and right, prediction=row.get("prediction"),
                             judge_score=score, judge_label=None if score is None else ("CORRECT" if right else "WRONG"),
                             new_calls=calls, tokens=tokens, seconds=round(seconds, 3))

    def _query_again(self, trajectory_id: str, qa: Any, intervention: Intervention | None,
                     qa_model: Any) -> tuple[TracedRun, int, int, float]:
        """Search and answer one question on the baseline's built layer (construction is not repeated)."""
        from membase.clients.guard import allow_model_requests
        from membase.clients.usage import CallMeter

        base = self.baseline(trajectory_id)
        system = base.system
        traj, _ = self._trajectory(trajectory_id)
        work = Path(tempfile.mkdtemp(prefix="query-", dir=self._scratch))
        graph = Path("traces") / trajectory_id / "graph_construction.json"
        (work / graph).parent.mkdir(parents=True)
        shutil.copyfile(base.work / graph, work / graph)
        started = time.perf_counter()
        try:
            with CallMeter() as meter, allow_model_requests(self.allow_new_calls), self.run_context():
                run = run_traced(system.layer, traj, [qa], intervention=system.with_repair(intervention),
                                 top_k=self.top_k, qa_model=qa_model or system.qa_model,
                                 judge_model=system.judge_model, dataset_type=self.dataset_type,
                                 metrics=self._metrics(), work_dir=work, stages=("search", "evaluation"))
        finally:
            shutil.rmtree(work, ignore_errors=True)
        return run, meter.calls, meter.tokens, time.perf_counter() - started

    def close(self) -> None:
        """Release the kept layers and the scratch folder."""
        for base in self._baselines.values():
            if base.system is not None:
                _close(base.system.layer)
        self._baselines.clear()
        shutil.rmtree(self._scratch, ignore_errors=True)

    def __enter__(self) -> RunReplayer:
        return self

    def __exit__(self, *_exc: object) -> None:
        self.close()


class _CacheOnly:
    """A fake or ``py:`` model behind the call cache, offline: a cache miss is refused as a real request is
    (those models never ask the request guard themselves, so offline they would answer anything)."""

    def __init__(self, inner: Any) -> None:
        self._inner = inner

    def __getattr__(self, name: str) -> Any:
        if name == "_inner":
            raise AttributeError(name)
        return getattr(self._inner, name)

    def complete(self, messages: list[dict[str, Any]], **kwargs: Any) -> Any:
        from membase.clients import guard
        from membase.exceptions import ModelRequestsBlockedError

        if not guard.ALLOW_MODEL_REQUESTS:
            raise ModelRequestsBlockedError(f"offline replay: a call to {getattr(self._inner, 'model', 'the model')} "
                                            "is not in the run's call cache")
        return self._inner.complete(messages, **kwargs)


def _ops(export: dict[str, Any]) -> list[tuple[str, str | None, str]]:
    return [(op["op_id"], op.get("op_name"), f"{Path(str(op.get('filename', ''))).name}:{op.get('lineno', '')}")
            for op in export["data"]["operations"]]


def _verdict(row: dict[str, Any]) -> tuple[str | None, float | None]:
    metrics = row.get("metrics") or {}
    judge = metrics.get("llm_judge") or metrics.get("f1") or {}
    value = judge.get("value")
    return row.get("prediction"), None if value is None else float(value)


def _close(layer: Any) -> None:
    try:
        layer.cleanup()
    except Exception:  # noqa: BLE001 - a layer that fails to close must not hide the replay's outcome
        pass


def _hint(manifest: RunManifest, mismatches: list[Any], divergences: list[Any], new_calls: int) -> str:
    if divergences:
        return (f"the {manifest.layer_type} layer recorded different ops on replay ({divergences[0]['divergence']}); "
                "a layer setting with randomness (sampling temperature, an unseeded sample) breaks replay")
    if new_calls:
        return ("calls missed the cache: the run kept no call cache (--no-call-cache), or a model's request "
                "changed (a prompt with today's date, a timestamp)")
    return (f"answers differ with no new call: the answer model {manifest.qa_model!r} or the judge "
            f"{manifest.judge_model!r} is not deterministic for the same request")
