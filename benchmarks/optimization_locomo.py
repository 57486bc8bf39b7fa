"""Attribution-guided vs unguided parameter search for NaiveRAG on LoCoMo, scored with no LLM.

Objective: context recall at a token budget (:mod:`toolkits.optimization.objective`): the share
of non-adversarial questions whose every evidence message reaches the context handed to the
answering step, cut to ``--budget`` tokens. NaiveRAG runs for real (MiniLM embeddings, qdrant
local mode). Conversations ``--train`` are searched on, ``--held-out`` only scored.

Rows of the table:

* **default** — the starting layer config (``--layer-config``) with ``--top-k``;
* **guided** — the parameter loop (:class:`toolkits.optimization.param_loop.ParameterRoundStep`):
  ``--rounds`` rounds, each a traced run, ``evidence_flow`` attribution of the missed questions,
  and a search over only the parameters found in the attributed operations' subgraphs and
  upstream of them, in stages: the attributed operations' own parameters first (``top_k`` for a
  retrieval miss: no rebuild) in a TPE study warm-started with the incumbent, the upstream ones
  (chunking) with the trials left once the own ones are flat, by a pattern search that moves
  one parameter at a time from the best point so far (:mod:`toolkits.optimization.guidance`);
* **guided_own** — guided with ``--upstream-hops 0``: only the attributed operations' own
  parameters (the behaviour before the upstream walk), an ablation;
* **guided_flat** — guided with the upstream walk but one study over every reached parameter
  (no stages, no warm start: the behaviour before the stages), an ablation;
* **unguided** — the same search over every tunable parameter of the layer, one round, no
  attribution, the same number of objective evaluations (``--evaluations``, incumbents included);
* **grid** — every point of a full grid (the ceiling a search could reach), the best point on
  the training conversations scored on the held-out ones; ``--grid-oracle`` also scores every
  grid point on the held-out conversations and reports the best (an upper bound no method can
  select without peeking).

Each method builds its layers anew (its own hit tables), sharing only the on-disk embedding
cache, so ``builds`` and wall time compare the methods' cost; embeddings computed by an earlier
row are cache hits for a later one. ``builds`` counts the objective's builds (one per distinct
construction config and conversation set) plus, for guided rows, the traced run of each round
(``traced_runs``), which builds the training conversations' memory of the round's incumbent.
The objective adopts that memory for the incumbent's score instead of building it again
(``builds.adopted`` in the results, not added: the traced run is that build), so a traced run
counts once, as the incumbent's build. Results go to
``--output-path`` after every row; a rerun skips finished rows (``--rerun`` recomputes them) and
the loops resume from their folders.

``--layer EverMemOS`` runs the same rows on EverMemOS offline (its deterministic fake model and
hashing embedder; :mod:`toolkits.optimization.evermemos_objective`), whose tunable parameters
are all retrieval ones (``retrieval_mode``, ``bm25_top_n``, ``emb_top_n``, ``rrf_k``, ``top_k``):
one build per row and conversation set, the grid is :data:`EVERMEMOS_GRID`.

Run (2 CPU cores: 1-2 hours cold, minutes with a warm cache)::

    python benchmarks/optimization_locomo.py --work-dir runs/optimization_locomo
"""

from __future__ import annotations

import argparse
import itertools
import json
import platform
import shutil
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]

DEFAULT_LOCOMO = ROOT.parent / "shared" / "data" / "locomo" / "locomo10.json"
DEFAULT_CONFIG = {"layer_type": "NaiveRAG"}
GRID = {
    "top_k": [1, 2, 3, 4, 5, 6, 8, 10, 12, 15, 20, 25, 30, 40, 50],
    "max_tokens": [128, 512],
    "num_overlap_msgs": [0, 2],
    "deferred": [False, True],
}
EVERMEMOS_GRID = {
    "top_k": [1, 2, 3, 4, 5, 6, 8, 10, 15, 20],
    "retrieval_config.retrieval_mode": ["agentic", "hybrid", "bm25_only", "emb_only"],
    "retrieval_config.rrf_k": [10, 60, 200],
}
"""The EverMemOS grid: its retrieval parameters (``bm25_top_n``/``emb_top_n`` stay at 50: a LoCoMo
conversation makes fewer memory units than that, so they change no ranking)."""
LAYERS = ("NaiveRAG", "EverMemOS")


def _indexes(text: str) -> list[int]:
    return [int(x) for x in text.split(",") if x.strip()]


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--dataset-path", default=str(DEFAULT_LOCOMO))
    p.add_argument("--layer", choices=LAYERS, default="NaiveRAG",
                   help="the layer searched when there is no --layer-config: NaiveRAG (MiniLM, qdrant) or EverMemOS "
                   "(offline: its deterministic fake model and hashing embedder, scored by "
                   "toolkits.optimization.evermemos_objective)")
    p.add_argument("--layer-config", default=None, help="starting layer config JSON (default: the --layer's defaults)")
    p.add_argument("--train", default="0,1,2,3,4", help="training conversations (0-based)")
    p.add_argument("--held-out", default="5,6,7,8,9", help="held-out conversations (0-based)")
    p.add_argument("--budget", type=int, default=1000, help="context budget in tokens")
    p.add_argument("--top-k", type=int, default=10, help="top_k of the starting config")
    p.add_argument("--evaluations", type=int, default=20,
                   help="objective evaluations per search method, incumbent scores included")
    p.add_argument("--rounds", type=int, default=2, help="rounds of the guided loop")
    p.add_argument("--max-attributed-cases", type=int, default=100,
                   help="missed questions attributed per guided round (seeded sample)")
    p.add_argument("--seed", type=int, default=0, help="seed of a single-seed run (see --seeds)")
    p.add_argument("--seeds", default=None,
                   help="comma list: run guided and unguided once per seed and report mean and sd (e.g. 0,1,2)")
    p.add_argument("--upstream-hops", type=int, default=2,
                   help="guided search also takes parameters up to N producing operations upstream of an attributed "
                   "one (0: the attributed operations' own subgraphs, the behaviour before)")
    p.add_argument("--max-sessions", type=int, default=None,
                   help="cut every conversation to its first N sessions (a reduced, faster run)")
    p.add_argument("--work-dir", default="runs/optimization_locomo", help="caches and loop folders")
    p.add_argument("--output-path", default=None, help="results JSON (default: <work-dir>/results.json)")
    p.add_argument("--methods", default="default,guided,unguided,grid", help="rows to run, in order")
    p.add_argument("--grid-oracle", action="store_true", help="also score every grid point on the held-out set")
    p.add_argument("--rerun", action="store_true", help="recompute finished rows (caches are kept)")
    p.add_argument("--progress", action=argparse.BooleanOptionalAction, default=True)
    return p


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    from membase.datasets import load_dataset
    from toolkits.optimization.bundle import MemoryConfigBundle
    from toolkits.optimization.objective import ContextRecallObjective
    from toolkits.optimization.sampling import select

    work = Path(args.work_dir)
    work.mkdir(parents=True, exist_ok=True)
    output = Path(args.output_path) if args.output_path else work / "results.json"
    config = json.loads(Path(args.layer_config).read_text(encoding="utf-8")) if args.layer_config else _default_config(
        args.layer)
    initial = MemoryConfigBundle.from_layer_config(config).with_updates({"top_k": args.top_k})
    full = load_dataset("LoCoMo", args.dataset_path)
    if args.max_sessions:
        from toolkits.optimization.pipeline import trim_dataset

        full = trim_dataset(full, max_sessions=args.max_sessions)
    seeds = _indexes(args.seeds) if args.seeds else [args.seed]
    train, held_out = _indexes(args.train), _indexes(args.held_out)
    if set(train) & set(held_out):
        print("error: --train and --held-out overlap", file=sys.stderr)
        return 2
    results: dict[str, Any] = {}
    if output.is_file() and not args.rerun:
        results = json.loads(output.read_text(encoding="utf-8")).get("rows", {})
    cache = work / "cache"

    def objective(indexes: list[int]) -> Any:
        if initial.backend == "EverMemOS":
            from toolkits.optimization.evermemos_objective import EverMemOSRecallObjective

            return EverMemOSRecallObjective(select(full, indexes), initial.layer_fields(), budget=args.budget,
                                            show_progress=args.progress)
        return ContextRecallObjective(select(full, indexes), initial.backend, initial.layer_fields(),
                                      budget=args.budget, cache_dir=cache, cache_tables=False,
                                      show_progress=args.progress)

    try:  # the objectives check the layer and its models when made (nothing is built yet)
        objective(train).close()
    except ValueError as exc:
        print(f"error: {args.layer_config or args.layer}: {exc}", file=sys.stderr)
        return 2

    meta = {
        "machine": f"{platform.machine()}, {_cpus()} CPUs, Python {platform.python_version()}",
        "layer": initial.backend, "dataset": str(args.dataset_path), "train": train, "held_out": held_out, "budget_tokens": args.budget,
        "evaluations": args.evaluations, "rounds": args.rounds, "seed": args.seed, "seeds": seeds,
        "upstream_hops": args.upstream_hops, "max_sessions": args.max_sessions, "initial": initial.to_json_dict(),
    }
    from membase.utils.io import atomic_write_json

    for method in [m.strip() for m in args.methods.split(",") if m.strip()]:
        for seed in seeds if method in SEEDED else [None]:
            name = method if seed is None or not args.seeds else f"{method}@seed{seed}"
            if name in results:
                continue
            print(f"== {name}", file=sys.stderr)
            started = time.perf_counter()
            train_obj, eval_obj = objective(train), objective(held_out)
            run_args = argparse.Namespace(**{**vars(args), "seed": seed if seed is not None else args.seed})
            folder = work if seed is None or not args.seeds else work / f"seed{seed}"
            try:
                row = RUNNERS[method](run_args, initial, train_obj, eval_obj, folder)
            finally:
                train_obj.close()
                eval_obj.close()
            row.update(wall_seconds=time.perf_counter() - started,
                       builds={"train": train_obj.builds, "held_out": eval_obj.builds,
                               "traced": row.get("traced_runs", 0), "adopted": getattr(train_obj, "adopted", 0)},
                       n_questions={"train": len(train_obj.questions), "held_out": len(eval_obj.questions)})
            results[name] = row
            atomic_write_json(output, {"meta": meta, "rows": results, "over_seeds": over_seeds(results)})
    print(format_table(results, meta))
    print(format_over_seeds(over_seeds(results)))
    print(f"-> {output}")
    return 0


def _default_config(layer: str) -> dict[str, Any]:
    if layer == "EverMemOS":
        from toolkits.optimization.evermemos_objective import EVERMEMOS_OFFLINE_FIELDS

        return {"layer_type": "EverMemOS", **EVERMEMOS_OFFLINE_FIELDS}
    return DEFAULT_CONFIG


def _grid(backend: str) -> dict[str, list[Any]]:
    return EVERMEMOS_GRID if backend == "EverMemOS" else GRID


def _cpus() -> int:
    import os

    return len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 0)


def _held_out(eval_obj: Any, bundle: Any) -> dict[str, float]:
    r = eval_obj.evaluate(bundle.layer_fields(), bundle.top_k)
    return {"micro": r.micro, "macro": r.macro}


def run_default(args: Any, initial: Any, train_obj: Any, eval_obj: Any, work: Path) -> dict[str, Any]:
    r = train_obj.evaluate(initial.layer_fields(), initial.top_k)
    return {"evaluations": 0, "train_micro": r.micro, "held_out": _held_out(eval_obj, initial),
            "params": _params(initial), "searched": []}


def _loop(args: Any, initial: Any, train_obj: Any, eval_obj: Any, folder: Path, *, guided: bool,
          staged: bool = True) -> dict[str, Any]:
    from toolkits.optimization.loop import IterationStore, run_rounds
    from toolkits.optimization.param_loop import SEARCH_FOLDER, ParameterRoundStep, ParameterSearchSettings
    from toolkits.optimization.parameters import parameter_registry

    rounds = args.rounds if guided else 1
    trials = args.evaluations // rounds - 1
    if args.rerun and folder.exists():
        shutil.rmtree(folder)
    settings = ParameterSearchSettings(budget=args.budget, trials_per_round=trials, guided=guided,
                                       default_top_k=args.top_k, seed=args.seed, show_progress=args.progress,
                                       max_attributed_cases=args.max_attributed_cases,
                                       upstream_hops=args.upstream_hops, staged=staged, warm_start=staged)
    runner = None
    if guided:
        from toolkits.runner import MemTraceConfig, MemTraceRunner

        runner = MemTraceRunner(MemTraceConfig(exploration_strategy="evidence_flow"))
    step_class = ParameterRoundStep
    if initial.backend == "EverMemOS":
        from toolkits.optimization.evermemos_objective import EverMemOSRoundStep

        step_class = EverMemOSRoundStep
    step = step_class(objective=train_obj, registry=parameter_registry(), settings=settings,
                              search_root=folder / SEARCH_FOLDER, attribution_runner=runner)
    store = IterationStore(folder)
    bundle, start = initial, 1
    last = store.last_complete()
    if last is not None:
        from toolkits.optimization.bundle import MemoryConfigBundle

        bundle, start = MemoryConfigBundle.load(last[1]), last[0] + 1
    rounds_data = [(train_obj.dataset, _indexes(args.train))] * rounds
    bundle = run_rounds(store, bundle=bundle, start=start, rounds=rounds_data, step=step,
                        show_progress=args.progress)
    summaries = [json.loads((store.folder(k) / "iteration_summary.json").read_text()) for k in range(1, rounds + 1)]
    searched = sorted({p for s in summaries for p in s["searched_parameters"]})
    return {
        "evaluations": sum(s["objective_evaluations"] for s in summaries),
        "train_micro": summaries[-1]["metrics"]["context_recall"],
        "held_out": _held_out(eval_obj, bundle), "params": _params(bundle), "searched": searched,
        "traced_runs": sum(1 for s in summaries if "traced_run_recall" in s),
        "rounds": [{k: s.get(k) for k in ("searched_parameters", "attributions_by_op_name", "attributed_parameters",
                                          "ranked_parameters", "stages", "skipped_as_flat",
                                          "incumbent", "accepted", "next_params", "num_failed_queries",
                                          "num_cases_attributed", "attributions_by_error_type",
                                          "traced_run_recall", "elapsed_seconds")} for s in summaries],
    }


def run_guided(args: Any, initial: Any, train_obj: Any, eval_obj: Any, work: Path) -> dict[str, Any]:
    return _loop(args, initial, train_obj, eval_obj, work / "guided", guided=True)


def run_guided_own(args: Any, initial: Any, train_obj: Any, eval_obj: Any, work: Path) -> dict[str, Any]:
    """Guided, but only the attributed operations' own parameters (no upstream walk): the ablation."""
    own = argparse.Namespace(**{**vars(args), "upstream_hops": 0})
    return _loop(own, initial, train_obj, eval_obj, work / "guided_own", guided=True)


def run_guided_flat(args: Any, initial: Any, train_obj: Any, eval_obj: Any, work: Path) -> dict[str, Any]:
    """Guided with the upstream walk, one study over every reached parameter (no stages): the ablation."""
    return _loop(args, initial, train_obj, eval_obj, work / "guided_flat", guided=True, staged=False)


def run_unguided(args: Any, initial: Any, train_obj: Any, eval_obj: Any, work: Path) -> dict[str, Any]:
    return _loop(args, initial, train_obj, eval_obj, work / "unguided", guided=False)


def run_grid(args: Any, initial: Any, train_obj: Any, eval_obj: Any, work: Path) -> dict[str, Any]:
    from tqdm.auto import tqdm

    from membase.utils.io import atomic_write_json

    grid = _grid(initial.backend)
    names = [name for name in grid if name != "top_k"]
    construction = [dict(zip(names, values, strict=True)) for values in itertools.product(*(grid[n] for n in names))]
    # Points are checkpointed per construction config: a stopped grid resumes where it was.
    partial_path = work / "grid_points.json"
    saved = json.loads(partial_path.read_text(encoding="utf-8")) if partial_path.is_file() and not args.rerun else {}
    if saved.get("grid") != grid or saved.get("budget") != args.budget:
        saved = {"grid": grid, "budget": args.budget, "train": {}, "held_out": {}}
    for fields in tqdm(construction, desc="grid", unit="config", disable=not args.progress):
        key = json.dumps(fields, sort_keys=True)
        if key not in saved["train"]:
            bundle = initial.with_updates(fields)
            saved["train"][key] = [train_obj.evaluate(bundle.layer_fields(), k).micro for k in grid["top_k"]]
            atomic_write_json(partial_path, saved)
    points = [{"params": {**json.loads(key), "top_k": k}, "train_micro": value}
              for key, values in saved["train"].items() for k, value in zip(grid["top_k"], values, strict=True)]
    best = max(points, key=lambda p: p["train_micro"])  # the first of equals, in grid order
    chosen = initial.with_updates(best["params"])
    row = {"evaluations": len(points), "train_micro": best["train_micro"], "held_out": _held_out(eval_obj, chosen),
           "params": _params(chosen), "searched": sorted(grid), "grid": grid}
    if args.grid_oracle:
        for fields in tqdm(construction, desc="grid oracle", unit="config", disable=not args.progress):
            key = json.dumps(fields, sort_keys=True)
            if key not in saved["held_out"]:
                bundle = initial.with_updates(fields)
                results = [eval_obj.evaluate(bundle.layer_fields(), k) for k in grid["top_k"]]
                saved["held_out"][key] = [[r.micro, r.macro] for r in results]
                atomic_write_json(partial_path, saved)
        scored = [{"params": {**json.loads(key), "top_k": k}, "micro": mm[0], "macro": mm[1]}
                  for key, values in saved["held_out"].items() for k, mm in zip(grid["top_k"], values, strict=True)]
        row["oracle"] = max(scored, key=lambda p: p["micro"])
    return row


RUNNERS = {"default": run_default, "guided": run_guided, "guided_own": run_guided_own, "guided_flat": run_guided_flat,
           "unguided": run_unguided, "grid": run_grid}
SEEDED = ("guided", "guided_own", "guided_flat", "unguided")
"""Rows whose result depends on the seed (the others are deterministic)."""


def over_seeds(rows: dict[str, Any]) -> dict[str, Any]:
    """Mean and sd over ``<method>@seed<s>`` rows: held-out micro/macro, train micro, builds."""
    from toolkits.optimization.statistics import mean_sd

    out: dict[str, Any] = {}
    for method in SEEDED:
        runs = [r for name, r in sorted(rows.items()) if name.startswith(f"{method}@seed")]
        if not runs:
            continue
        out[method] = {
            "held_out_micro": mean_sd([r["held_out"]["micro"] for r in runs]),
            "held_out_macro": mean_sd([r["held_out"]["macro"] for r in runs]),
            "train_micro": mean_sd([r["train_micro"] for r in runs]),
            "evaluations": mean_sd([r["evaluations"] for r in runs]),
            "builds": mean_sd([_builds(r) for r in runs]),
            "searched": sorted({p for r in runs for p in r["searched"]}),
        }
    return out


def _builds(row: dict[str, Any]) -> int:
    """Layer builds of a row: the objective's (train and held-out) and the guided rounds' traced runs.

    ``adopted`` (incumbent tables read off a traced run's memory) is not added: those builds are
    the traced runs.
    """
    builds = row.get("builds", {})
    return builds.get("train", 0) + builds.get("held_out", 0) + builds.get("traced", 0)


def format_over_seeds(summary: dict[str, Any]) -> str:
    def ms(stats: dict[str, Any], digits: int = 4) -> str:
        return f"{stats['mean']:.{digits}f} ± {stats['sd']:.{digits}f}"

    lines = []
    for method, s in summary.items():
        lines.append(f"{method} over {s['held_out_micro']['n']} seeds: held-out micro {ms(s['held_out_micro'])}, macro "
                     f"{ms(s['held_out_macro'])}, train micro {ms(s['train_micro'])}, builds {ms(s['builds'], 1)}, "
                     f"searched {','.join(s['searched'])}")
    return "\n".join(lines)


def _params(bundle: Any) -> dict[str, Any]:
    if bundle.backend == "EverMemOS":
        names = ("retrieval_config.retrieval_mode", "retrieval_config.bm25_top_n", "retrieval_config.emb_top_n",
                 "retrieval_config.rrf_k")
    else:
        names = ("max_tokens", "num_overlap_msgs", "deferred")
    return {"top_k": bundle.top_k, **{k: bundle.get(k) for k in names}}


def format_table(rows: dict[str, Any], meta: dict[str, Any]) -> str:
    lines = [
        f"{meta.get('layer', 'NaiveRAG')}, LoCoMo train {meta['train']} / held-out {meta['held_out']}, budget {meta['budget_tokens']} tokens, "
        f"seed {meta['seed']}, {meta['machine']}",
        f"{'method':<10} {'held-out micro':>14} {'macro':>7} {'train micro':>11} {'evals':>6} {'builds':>7} "
        f"{'wall s':>8}  config",
    ]
    for name, r in rows.items():
        lines.append(
            f"{name:<10} {r['held_out']['micro']:>14.4f} {r['held_out']['macro']:>7.4f} {r['train_micro']:>11.4f} "
            f"{r['evaluations']:>6} {_builds(r):>7} "
            f"{r.get('wall_seconds', 0):>8.0f}  {json.dumps(r['params'], sort_keys=True)}"
        )
        if "oracle" in r:
            o = r["oracle"]
            lines.append(f"{'oracle':<10} {o['micro']:>14.4f} {o['macro']:>7.4f} {'':>11} {'':>6} {'':>7} {'':>8}  "
                         f"{json.dumps(o['params'], sort_keys=True)} (best held-out grid point)")
    return "\n".join(lines)


if __name__ == "__main__":
    sys.exit(main())
