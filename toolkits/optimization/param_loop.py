"""The parameter loop: attribution-guided search of a layer's tunable parameters, scored with no LLM.

It plugs a :class:`ParameterRoundStep` into the prompt loop's round driver
(:func:`toolkits.optimization.loop.run_rounds`). One round on the training conversations:

1. **traced run** of the current bundle (:func:`toolkits.optimization.pipeline.run_pipeline`;
   the answering step gets the context cut to the token budget and a fixed placeholder answer,
   so no model is called); the memory it built is handed to the objective
   (``adopt_saved_memory``), so scoring the incumbent in step 5 builds nothing
   (``incumbent_memory_from_traced_run`` in the summary; False: its table was there already, from
   the previous round's trials, or the objective builds it as before);
2. **failed cases** = the questions whose evidence did not reach that context
   (``failed_cases.json``);
3. **attribution** with ``evidence_flow`` through :class:`toolkits.runner.MemTraceRunner`
   (``error_attribution.json``);
4. **grouping** with :func:`~toolkits.optimization.grouping.group_attributions` over the prompt and
   parameter targets (``grouped_attributions.json``); the searched parameters are the parameter
   candidates of the attributed operations (:func:`~toolkits.optimization.parameters.attributed_parameters`),
   every other parameter keeps its value; prompt targets are reported but not searched (the
   objective does not depend on them);
5. **search**: the incumbent is scored once, then ``trials_per_round`` Optuna trials
   (:class:`~toolkits.optimization.search.ParameterSearch`, seeded by ``seed + k``) score
   candidate configs with :class:`~toolkits.optimization.objective.ContextRecallObjective`
   (``trials.json``, each trial with its ``stage``); the best trial becomes the next bundle only
   if it beats the incumbent. Guided rounds search in stages
   (:mod:`toolkits.optimization.guidance`): the attributed operations' own parameters first,
   until flat, then the upstream ones from the best point so far, each stage's study warm-started
   with that point; own parameters found flat by the previous round, which changed no
   construction setting, are not searched again. ``iteration_summary.json`` → ``stages`` says
   how each stage ended (``flat``, ``exhausted``, ``budget``).

``guided=False`` is the ablation: no traced run or attribution, every parameter of the layer is
searched in one study. The study of round k is kept in ``<dir>/param_search/iteration_<k>.sqlite3``
(a guided stage's in ``iteration_<k>_<stage>.sqlite3``; outside the round folder, which an
interrupted round loses), so a rerun continues the search with the same trials.
"""

from __future__ import annotations

import json
import time
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from membase.utils.io import atomic_write_json
from toolkits.optimization.bundle import BundleError, MemoryConfigBundle
from toolkits.optimization.guidance import (
    OWN_STAGE,
    RankedParameter,
    SearchStage,
    has_finer_moves,
    is_flat,
    pattern_moves,
    plan_stages,
    rank_parameters,
    space_size,
)
from toolkits.optimization.loop import (
    ATTRIBUTION_FILENAME,
    FAILED_CASES_FILENAME,
    GROUPED_FILENAME,
    MEMORY_SYSTEMS,
    SUMMARY_FILENAME,
    RoundContext,
    RoundError,
    RoundOutput,
)
from toolkits.optimization.objective import BudgetedContextBuilder, ContextRecallObjective, recall_questions
from toolkits.optimization.parameters import attributed_parameters, layer_parameter_targets, parameter_spec
from toolkits.optimization.search import InfeasibleConfig, ParameterSearch, SearchOutcome, SearchSpaceMismatch

__all__ = [
    "FIXED_ANSWER",
    "SEARCH_FOLDER",
    "TRIALS_FILENAME",
    "ParameterRoundStep",
    "ParameterSearchSettings",
    "context_recall_evaluation",
]

SEARCH_FOLDER = "param_search"
TRIALS_FILENAME = "trials.json"
FIXED_ANSWER = "[no answer: the parameter loop scores the context handed to the answering step]"
METRIC = "context_recall"
ALL_STAGE = "all"
MAX_PATTERN_LEVEL = 3
"""Step halvings of a float parameter in the upstream pattern search (ints refine down to one unit)."""


def _one_stage(parameters: Sequence[str]) -> list[SearchStage]:
    """One study over every parameter (the unguided search, or guided without stages)."""
    return [SearchStage(name=ALL_STAGE, parameters=tuple(parameters), stop_when_flat=False)] if parameters else []


@dataclass(kw_only=True)
class ParameterSearchSettings:
    """How the parameter rounds search."""

    budget: int = 1000
    """Context budget in tokens."""
    trials_per_round: int = 14
    """Search trials per round (the incumbent's score is one more objective evaluation)."""
    guided: bool = True
    """Search only the parameters of attributed operations (False: every parameter, no attribution)."""
    default_top_k: int = 10
    """``top_k`` when the bundle has none."""
    seed: int = 42
    n_startup_trials: int = 8
    max_attributed_cases: int | None = 100
    """Attribute at most this many missed questions per round (a seeded sample; None: all).
    evidence_flow takes seconds per question on a whole LoCoMo conversation, and the searched
    parameters only need the operations the misses point to."""
    upstream_hops: int = 2
    """Also search the parameters up to this many producing operations upstream of an attributed
    one (:func:`~toolkits.optimization.grouping.upstream_targets`; 0: only the op's own subgraph)."""
    staged: bool = True
    """Guided rounds search the attributed operations' own parameters first and the upstream ones
    with the trials left once the own ones are flat (:mod:`toolkits.optimization.guidance`);
    False: one study over every reached parameter (the behaviour before)."""
    patience: int = 2
    """A stage is flat after this many trials in a row that do not beat its best."""
    warm_start: bool = True
    """Each guided stage's study starts with the best point so far as a finished trial."""
    show_progress: bool = True


@dataclass(kw_only=True)
class ParameterRoundStep:
    """One round of the parameter loop (see the module docstring); a ``RoundStep``.

    Args:
        objective: context recall on the training conversations.
        registry: the target registry (prompt and parameter targets, e.g. ``parameter_registry()``).
        settings: search settings.
        search_root: folder of the per-round studies (``<dir>/param_search``).
        attribution_runner: a :class:`toolkits.runner.MemTraceRunner` with the ``evidence_flow``
            strategy (needed when guided).
    """

    objective: ContextRecallObjective
    registry: Any
    settings: ParameterSearchSettings
    search_root: Path
    attribution_runner: Any = None
    evaluations: int = field(default=0, init=False)
    """Objective evaluations (incumbents and trials) run by this step so far."""

    def __call__(self, ctx: RoundContext) -> RoundOutput:
        """Search the round's parameters from the incumbent (attribution-ranked stages when guided).

        Returns the best configuration found and the round's summary.
        """
        bundle, s = ctx.bundle, self.settings
        layer_type = bundle.backend
        top_k = bundle.top_k or s.default_top_k
        summary: dict[str, Any] = {"objective": METRIC, "budget_tokens": s.budget, "guided": s.guided,
                                   "trajectory_indexes": ctx.trajectory_indexes}
        if s.guided:
            ranked, attribution_summary = self._attributed(ctx, top_k)
            summary.update(attribution_summary)
            summary["ranked_parameters"] = [asdict(p) for p in ranked]
            skipped = self._flat_last_round(ctx)
            stages = plan_stages(ranked, skip=skipped) if s.staged else _one_stage([p.name for p in ranked])
            summary["skipped_as_flat"] = sorted(skipped & {p.name for p in ranked}) if s.staged else []
        else:
            stages = _one_stage([t.field for t in layer_parameter_targets(self.registry, layer_type)])
        summary["searched_parameters"] = [name for stage in stages for name in stage.parameters]
        current = self._point(bundle)
        incumbent = self._score(bundle)
        self.evaluations += 1
        summary["incumbent"] = {"params": current, **incumbent}
        trials: list[dict[str, Any]] = []
        best_bundle, best_value, best_trial = bundle, incumbent["micro"], None
        records = []
        for stage in stages:
            remaining = s.trials_per_round - len(trials)
            if remaining <= 0:
                break
            run_stage = self._pattern_stage if stage.method == "pattern" else self._run_stage
            outcome, record = run_stage(ctx, stage, best_bundle, best_value, remaining)
            trials.extend({**t, "stage": stage.name, "point": json.loads(self._key(best_bundle, t["params"]))}
                          for t in outcome.trials)
            records.append(record)
            best = outcome.best
            if best is not None and best["value"] > best_value:
                best_bundle, best_value, best_trial = best_bundle.with_updates(best["params"]), best["value"], best
        self.evaluations += len(trials)
        summary["stages"] = records
        summary["flat_parameters"] = sorted({n for r in records if r["ended"] in ("flat", "exhausted")
                                             for n in r["parameters"]})
        if trials:
            summary["best_trial"] = best_trial or max(
                (t for t in trials if t["state"] == "COMPLETE"), key=lambda t: t["value"], default=None)
        atomic_write_json(ctx.folder / TRIALS_FILENAME, trials)
        accepted = best_bundle is not bundle
        summary.update(
            num_trials=len(trials),
            num_failed_trials=sum(1 for t in trials if t["state"] == "FAIL"),
            objective_evaluations=1 + len(trials),
            accepted=accepted,
            updated_fields=sorted(k for k, v in self._point(best_bundle).items() if current.get(k) != v),
            next_params=self._point(best_bundle),
            metrics={METRIC: best_value},
        )
        return RoundOutput(next_bundle=best_bundle, summary=summary)

    def _run_stage(self, ctx: RoundContext, stage: SearchStage, base: MemoryConfigBundle, start: float,
                   n_trials: int) -> tuple[Any, dict[str, Any]]:
        """One stage's study, from ``base`` (the best point so far, scored ``start``)."""
        s = self.settings
        specs = {name: parameter_spec(self.registry.get(name)) for name in stage.parameters}
        single = stage.name == ALL_STAGE
        # The unguided search keeps the study file and seed it always had (resumable as before).
        path = self.search_root / (f"iteration_{ctx.k}.sqlite3" if single else f"iteration_{ctx.k}_{stage.name}.sqlite3")
        seed = s.seed + ctx.k + (0 if stage.name in (ALL_STAGE, OWN_STAGE) else 7919)
        warm = [({n: self._value(base, n) for n in specs}, start)] if s.warm_start and not single else []
        search = ParameterSearch(specs, storage_path=path, seed=seed, n_startup_trials=s.n_startup_trials,
                                 warm_start=warm)
        size = space_size(specs)

        def stop(outcome: Any) -> bool:
            if not stage.stop_when_flat:
                return False
            if size is not None and len({json.dumps(t["params"], sort_keys=True) for t in outcome.trials}) >= size:
                return True
            return is_flat([t["value"] for t in outcome.trials], start, patience=s.patience)

        try:
            outcome = search.run(lambda params: self._trial(base, params), n_trials, show_progress=s.show_progress,
                                 stop=stop)
        except SearchSpaceMismatch as exc:
            raise RoundError(f"round {ctx.k}: {exc}") from None
        values = [t["value"] for t in outcome.trials]
        ended = "budget"
        if stage.stop_when_flat and len(outcome.trials) < n_trials:
            ended = "exhausted" if not is_flat(values, start, patience=s.patience) else "flat"
        return outcome, {"stage": stage.name, "parameters": list(stage.parameters), "trials": len(outcome.trials),
                         "start": start, "best": outcome.best["value"] if outcome.best else None, "ended": ended,
                         "warm_start": bool(warm)}

    def _pattern_stage(self, ctx: RoundContext, stage: SearchStage, base: MemoryConfigBundle, start: float,
                       n_trials: int) -> tuple[Any, dict[str, Any]]:
        """Moves of one parameter at a time from ``base`` (see :func:`~toolkits.optimization.guidance.pattern_moves`).

        Deterministic: the moves depend only on the scores. Scores are kept in
        ``<search_root>/iteration_<k>_<stage>.json`` so a rerun replays them without rebuilding, and
        points earlier rounds scored are not tried again.
        """
        from toolkits.optimization.statistics import improves

        specs = {name: parameter_spec(self.registry.get(name)) for name in stage.parameters}
        path = self.search_root / f"iteration_{ctx.k}_{stage.name}.json"
        stored = json.loads(path.read_text(encoding="utf-8")) if path.is_file() else {}
        tried = self._points_tried_before(ctx)
        point = {n: self._value(base, n) for n in specs}
        best_value, best_point = start, dict(point)
        tried.add(self._key(base, point))  # the start point is scored already
        outcome = SearchOutcome()
        level, ended = 0, "budget"
        while len(outcome.trials) < n_trials:
            candidates = pattern_moves(specs, best_point, level)
            fresh = [c for c in candidates if self._key(base, c) not in tried]
            if not fresh:  # every move of this size from the best point was scored: finer steps
                if not any(has_finer_moves(specs[n], best_point[n], level, float_levels=MAX_PATTERN_LEVEL)
                           for n in specs):
                    ended = "exhausted"
                    break
                level += 1
                continue
            candidate = fresh[0]
            key = self._key(base, candidate)
            tried.add(key)
            entry = stored.get(key) or self._pattern_trial(base, candidate, len(outcome.trials))
            entry["number"] = len(outcome.trials)
            stored[key] = entry
            atomic_write_json(path, stored)
            outcome.trials.append(entry)
            if entry["state"] == "COMPLETE" and improves(best_value, entry["value"]):
                best_value, best_point = entry["value"], candidate
        return outcome, {"stage": stage.name, "method": "pattern", "parameters": list(stage.parameters),
                         "trials": len(outcome.trials), "start": start,
                         "best": outcome.best["value"] if outcome.best else None, "ended": ended, "warm_start": True}

    def _pattern_trial(self, base: MemoryConfigBundle, params: dict[str, Any], number: int) -> dict[str, Any]:
        started = time.perf_counter()
        entry: dict[str, Any] = {"number": number, "params": params}
        try:
            value, extra = self._trial(base, params)
        except InfeasibleConfig as exc:
            entry.update(state="FAIL", value=None, error=str(exc))
        else:
            entry.update(state="COMPLETE", value=value, **extra)
        entry["seconds"] = time.perf_counter() - started
        return entry

    def _key(self, base: MemoryConfigBundle, params: dict[str, Any]) -> str:
        """The whole point a trial scores (the stage's parameters on top of ``base``)."""
        return json.dumps({**self._point(base), **params}, sort_keys=True)

    def _points_tried_before(self, ctx: RoundContext) -> set[str]:
        tried: set[str] = set()
        for k in range(1, ctx.k):
            folder = ctx.folder.parent / f"iteration_{k}"
            summary_path, trials_path = folder / SUMMARY_FILENAME, folder / TRIALS_FILENAME
            if not (summary_path.is_file() and trials_path.is_file()):
                continue
            base = json.loads(summary_path.read_text(encoding="utf-8")).get("incumbent", {}).get("params", {})
            tried.add(json.dumps(base, sort_keys=True))
            for trial in json.loads(trials_path.read_text(encoding="utf-8")):
                if "point" in trial:
                    tried.add(json.dumps(trial["point"], sort_keys=True))
        return tried

    def _flat_last_round(self, ctx: RoundContext) -> set[str]:
        """Own parameters the previous round found flat, when it changed no construction setting.

        Searching them again at the same construction would spend trials on a known plateau;
        after a construction change the memory is another one, and they are searched again.
        """
        previous = ctx.folder.parent / f"iteration_{ctx.k - 1}" / SUMMARY_FILENAME
        if ctx.k < 2 or not previous.is_file():
            return set()
        summary = json.loads(previous.read_text(encoding="utf-8"))
        rebuilt = any(parameter_spec(self.registry.get(name)).scope != "search"
                      for name in summary.get("updated_fields", []) if name in self.registry)
        return set() if rebuilt else set(summary.get("flat_parameters", []))

    # -- scoring --------------------------------------------------------------------------------
    def _point(self, bundle: MemoryConfigBundle) -> dict[str, Any]:
        """The current value of every parameter of the layer."""
        return {t.field: self._value(bundle, t.field) for t in layer_parameter_targets(self.registry, bundle.backend)}

    def _value(self, bundle: MemoryConfigBundle, name: str) -> Any:
        return (bundle.top_k or self.settings.default_top_k) if name == "top_k" else bundle.get(name)

    def _score(self, bundle: MemoryConfigBundle) -> dict[str, Any]:
        result = self.objective.evaluate(bundle.layer_fields(), bundle.top_k or self.settings.default_top_k)
        return {"micro": result.micro, "macro": result.macro, "n_questions": result.n}

    def _trial(self, bundle: MemoryConfigBundle, params: dict[str, Any]) -> tuple[float, dict[str, Any]]:
        from membase.exceptions import ConfigError

        try:
            candidate = bundle.with_updates(params)
            scored = self._score(candidate)
        except (BundleError, ConfigError, KeyError, ValueError) as exc:
            raise InfeasibleConfig(f"{type(exc).__name__}: {exc}") from None
        return scored["micro"], {"macro": scored["macro"]}

    # -- attribution ----------------------------------------------------------------------------
    def _attributed(self, ctx: RoundContext, top_k: int) -> tuple[list[RankedParameter], dict[str, Any]]:
        from membase.clients.fake import FunctionChatModel
        from toolkits.optimization.grouping import group_attributions
        from toolkits.optimization.pipeline import PipelineSettings, run_pipeline

        bundle = ctx.bundle
        settings = PipelineSettings(
            top_k=top_k, qa_model=FunctionChatModel(lambda _m, **_k: FIXED_ANSWER, model="fixed-answer"),
            judge_model=None, metrics=("f1",), tracing=True, show_progress=self.settings.show_progress,
            context_builder=BudgetedContextBuilder(self.settings.budget),
        )
        scored = {q.qa_id: q for q in recall_questions(ctx.dataset)[0]}
        run = run_pipeline(bundle, ctx.dataset, ctx.folder / "run", settings)
        adopted = self._adopt_traced_memory(run, bundle, ctx.dataset)
        cases, graphs, hits = self._failed_cases(run, scored)
        atomic_write_json(ctx.folder / FAILED_CASES_FILENAME, [c.model_dump(mode="json") for c in cases])
        attributed = cases
        cap = self.settings.max_attributed_cases
        if cap is not None and len(cases) > cap:
            import random

            keep = set(random.Random(self.settings.seed + ctx.k).sample(range(len(cases)), cap))
            attributed = [c for i, c in enumerate(cases) if i in keep]
        attributions, failures = self._attribute(attributed, graphs, bundle.backend)
        atomic_write_json(ctx.folder / ATTRIBUTION_FILENAME,
                          {"attributions": [a.model_dump(mode="json") for a in attributions], "failures": failures})
        targets = self.registry.for_layer(bundle.backend)
        by_user: dict[str, list[Any]] = {}
        for attribution in attributions:
            by_user.setdefault(attribution.metadata["user_id"], []).append(attribution)
        groups = [group_attributions(items, graphs[user], targets, upstream_hops=self.settings.upstream_hops)
                  for user, items in sorted(by_user.items())]
        atomic_write_json(ctx.folder / GROUPED_FILENAME, {user: g.as_json() for user, g in zip(sorted(by_user), groups,
                                                                                                strict=True)})
        counts = attributed_parameters(groups, self.registry, bundle.backend)
        ranked = rank_parameters(groups, [t.field for t in layer_parameter_targets(self.registry, bundle.backend)])
        by_type: dict[str, int] = {}
        by_op: dict[str, int] = {}
        for attribution in attributions:
            by_type[attribution.error_type] = by_type.get(attribution.error_type, 0) + 1
            op_name = attribution.metadata.get("op_name") or "?"
            by_op[op_name] = by_op.get(op_name, 0) + 1
        prompt_fields = sorted({f for g in groups for f in g.by_field if self.registry.get(f).kind == "prompt"})
        summary = {
            "traced_run_recall": sum(hits.values()) / len(hits) if hits else 0.0,
            "incumbent_memory_from_traced_run": adopted,
            "num_failed_queries": len(cases),
            "num_cases_attributed": len(attributed),
            "num_attributed": len(attributions),
            "num_attribution_failures": len(failures),
            "attributions_by_error_type": by_type,
            "attributions_by_op_name": by_op,
            "attributed_parameters": counts,
            "upstream_parameters": sorted({f for g in groups for a in g.assignments for f in a.upstream
                                           if f in counts}),
            "num_unoptimizable_errors": sum(len(g.unoptimizable) for g in groups),
            "prompt_targets_not_searched": prompt_fields,
        }
        return ranked, summary

    def _adopt_traced_memory(self, run: Any, bundle: MemoryConfigBundle, dataset: Any) -> bool:
        """Hand the memory the traced run built to the objective, so scoring the incumbent builds nothing.

        Only a run that built every conversation without a failure is handed over (a failed
        message would leave a partial memory); an objective that cannot adopt builds as before.
        """
        adopt = getattr(self.objective, "adopt_saved_memory", None)
        construction = run.reports.get("construction", {})
        if adopt is None or construction.get("failures") or construction.get("users_failed"):
            return False
        before = getattr(self.objective, "adopted", 0)
        # False also when the incumbent was scored before (a trial of the last round): nothing to adopt
        return bool(adopt(bundle.layer_fields(), run.folder, dataset)) and getattr(self.objective, "adopted", 0) > before

    def _failed_cases(self, run: Any, scored: dict[str, Any]) -> tuple[list[Any], dict[str, Any], dict[str, bool]]:
        from membase.runners._common import read_graph
        from membase.types import MemoryEntry
        from toolkits.bench_utils import FailedQueryCase
        from toolkits.optimization.objective import evidence_reaches

        builder = BudgetedContextBuilder(self.settings.budget)
        graphs: dict[str, Any] = {}
        for user, path in run.graph_paths.items():
            graphs[user] = read_graph(Path(path))
        cases, hits = [], {}
        for record in run.outputs:
            qa = record["qa_pair"]
            question = scored.get(qa["id"])
            if question is None:
                continue  # adversarial or without resolvable evidence: not scored
            memories = [MemoryEntry.model_validate(m) for m in record.get("retrieved_memories", [])]
            hit = evidence_reaches(builder(memories), question)
            hits[question.qa_id] = hit
            graph = graphs.get(record["user_id"])
            if hit or graph is None:
                continue
            try:
                query_id = graph.get_latest_variable(f"query:{qa['id']}").full_node_id
            except KeyError:
                continue
            evidence = []
            for name in question.evidence_ids:
                try:
                    evidence.append(graph.get_latest_variable(name).full_node_id)
                except KeyError:
                    continue
            cases.append(FailedQueryCase(
                query_full_node_id=query_id, query=qa["question"], golden_answer=", ".join(qa["golden_answers"]),
                prediction=str(record.get("prediction") or ""), source_evidence_full_node_ids=evidence,
                metadata={"user_id": record["user_id"], "qa_id": qa["id"]},
            ))
        return cases, graphs, hits

    def _attribute(self, cases: Sequence[Any], graphs: dict[str, Any], layer_type: str
                   ) -> tuple[list[Any], list[dict[str, str]]]:
        from toolkits.optimization.records import Attribution

        if not cases:
            return [], []
        if self.attribution_runner is None:
            raise RoundError("the guided parameter loop needs an attribution runner (evidence_flow)")
        report = self.attribution_runner.run(
            list(cases), [graphs[c.metadata["user_id"]] for c in cases], batch_size=4,
            use_source_evidence_nodes=True, use_pseudo_source_evidence=False,
            memory_system=MEMORY_SYSTEMS.get(layer_type),
        )
        attributions, failures = [], []
        for case, result in zip(cases, report.results, strict=True):
            if result.prediction is None:
                failures.append({"query_id": case.query_full_node_id, "failure": result.failure or "no prediction"})
                continue
            graph = graphs[case.metadata["user_id"]]
            op_id = result.prediction.get("op_id") or ""
            op_name = None
            if op_id:
                try:
                    op_name = graph.get_operation(op_id).op_name
                except KeyError:
                    op_name = None
            attributions.append(Attribution(
                **result.prediction, query_full_node_id=case.query_full_node_id, query=case.query,
                golden_answer=case.golden_answer, prediction=case.prediction,
                source=self.attribution_runner.config.exploration_strategy,
                metadata={"user_id": case.metadata["user_id"], "qa_id": case.metadata["qa_id"], "op_name": op_name},
            ))
        return attributions, failures


# -- the held-out comparison ---------------------------------------------------------------------------


def _outputs(result: Any) -> list[dict[str, Any]]:
    return [
        {"qa_pair": {"id": q.qa_id, "question": q.question, "golden_answers": list(q.golden_answers),
                     "metadata": {"question_type": q.question_type}},
         "user_id": q.conversation, "prediction": None,
         "metrics": {METRIC: {"value": 1.0 if result.hits[q.qa_id] else 0.0, "metadata": {}}}}
        for q in result.questions
    ]


def context_recall_evaluation(
    objective: ContextRecallObjective,
    initial: MemoryConfigBundle,
    final: MemoryConfigBundle,
    *,
    default_top_k: int,
    indexes: Sequence[int],
    bootstrap_samples: int = 1000,
    seed: int = 0,
    output_path: str | Path | None = None,
) -> dict[str, Any]:
    """Held-out context recall of the initial and the final bundle (``final_evaluation.json``).

    Micro and macro before/after, the paired bootstrap interval of the micro difference and every
    question's outcome (:func:`toolkits.optimization.final_eval.compare_runs` on 0/1 scores).
    """
    from toolkits.optimization.final_eval import compare_runs

    before = objective.evaluate(initial.layer_fields(), initial.top_k or default_top_k)
    after = objective.evaluate(final.layer_fields(), final.top_k or default_top_k)
    comparison = compare_runs(_outputs(before), _outputs(after), [METRIC], bootstrap_samples=bootstrap_samples,
                              seed=seed)
    for record in comparison["questions"]:
        b, a = record["before"][METRIC], record["after"][METRIC]
        record["outcome"] = ("still_reached" if a else "lost") if b else ("gained" if a else "still_missed")
    counts: dict[str, int] = {}
    for record in comparison["questions"]:
        counts[record["outcome"]] = counts.get(record["outcome"], 0) + 1
    report = {
        "objective": METRIC,
        "budget_tokens": objective.budget,
        "layer_type": objective.layer_type,
        "trajectory_indexes": list(indexes),
        "trajectories": [t.id for t in objective.dataset.trajectories],
        "skipped_questions": objective.skipped,
        "identical_bundles": initial.digest() == final.digest(),
        "initial_bundle": initial.to_json_dict(),
        "final_bundle": final.to_json_dict(),
        "context_recall": {
            "before": {"micro": before.micro, "macro": before.macro, "by_conversation": before.by_conversation,
                       "by_question_type": before.by_question_type},
            "after": {"micro": after.micro, "macro": after.macro, "by_conversation": after.by_conversation,
                      "by_question_type": after.by_question_type},
        },
        "outcome_counts": counts,
        **comparison,
    }
    if output_path is not None:
        atomic_write_json(output_path, report)
    return report
