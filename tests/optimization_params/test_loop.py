"""The parameter loop end to end: only attributed parameters are searched; run_optimization.py
--objective context_recall leaves its files and a held-out comparison; its configs run in membase."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from types import SimpleNamespace

import pytest

pytest.importorskip("optuna", reason="the parameter loop needs the optim extra (optuna)")

FAKE_RAG = {"layer_type": "NaiveRAG", "retriever_name_or_path": "fake:64", "retriever_dim": 64, "vector_store": "memory"}


@pytest.fixture(scope="module")
def slices(locomo_file):
    from toolkits.optimization.sampling import load_full_dataset, select

    full = load_full_dataset(locomo_file, max_sessions=2)
    return select(full, [0]), select(full, [1])


@dataclass
class _StubAttribution:
    """An attribution runner that blames one named op of each failed question's retrieval."""

    op_name: str
    config: SimpleNamespace = field(default_factory=lambda: SimpleNamespace(exploration_strategy="stub"))
    seen: list = field(default_factory=list)

    def run(self, cases, graphs, **_kwargs):
        results = []
        for case, graph in zip(cases, graphs, strict=True):
            self.seen.append(case)
            ops = [op for op in graph.get_operations_by_variable(case.query_full_node_id)
                   if op.op_name == "memory_system.retrieve"]
            op_id = ops[0].op_id
            if self.op_name != "memory_system.retrieve":  # some op of that name
                op_id = next(op.op_id for op in graph.get_all_operations() if op.op_name == self.op_name)
            results.append(SimpleNamespace(prediction={"error_type": "RetrievalError", "op_id": op_id, "reason": "stub"},
                                           failure=None))
        return SimpleNamespace(results=results)


def _round(tmp_path, dataset, op_name, trials=4, cap=None, hops=0):
    from toolkits.optimization.bundle import MemoryConfigBundle
    from toolkits.optimization.loop import RoundContext
    from toolkits.optimization.objective import ContextRecallObjective
    from toolkits.optimization.param_loop import ParameterRoundStep, ParameterSearchSettings
    from toolkits.optimization.parameters import parameter_registry

    bundle = MemoryConfigBundle.from_layer_config({**FAKE_RAG, "num_overlap_msgs": 1})
    objective = ContextRecallObjective(dataset, "NaiveRAG", bundle.layer_fields(), budget=300)
    stub = _StubAttribution(op_name)
    step = ParameterRoundStep(
        objective=objective, registry=parameter_registry(), search_root=tmp_path / "search", attribution_runner=stub,
        settings=ParameterSearchSettings(budget=300, trials_per_round=trials, n_startup_trials=2, show_progress=False,
                                         max_attributed_cases=cap, upstream_hops=hops),
    )
    folder = tmp_path / "iteration_1"
    folder.mkdir()
    output = step(RoundContext(k=1, folder=folder, bundle=bundle, dataset=dataset, trajectory_indexes=[0]))
    return bundle, output, folder, stub


@pytest.mark.parametrize("op_name, hops, expected", [
    ("memory_system.retrieve", 0, {"top_k"}),
    ("memory_system.message_buffer_update", 0, {"max_tokens", "num_overlap_msgs", "deferred"}),
    ("memory_system.add", 0, set()),  # its subgraph holds no parameter: nothing is searched
    # upstream: the retrieved units were cut by the buffer update, whose inputs are the chunking settings
    ("memory_system.retrieve", 2, {"top_k", "max_tokens", "num_overlap_msgs", "deferred"}),
])
@pytest.mark.slow
def test_only_parameters_in_an_attributed_ops_subgraph_are_searched(tmp_path, slices, op_name, hops, expected):
    bundle, output, folder, stub = _round(tmp_path, slices[0], op_name, hops=hops)
    summary = output.summary
    assert stub.seen and summary["num_failed_queries"] == len(stub.seen) == summary["num_cases_attributed"]
    assert set(summary["searched_parameters"]) == expected
    trials = json.loads((folder / "trials.json").read_text())
    assert len(trials) == (4 if expected else 0)
    # staged: the retrieval's own top_k first, the upstream chunking settings with what is left
    stages = {t["stage"]: set(t["params"]) for t in trials}
    assert set().union(*stages.values()) == expected if trials else not stages
    if hops:
        assert stages.get("own", {"top_k"}) == {"top_k"} and stages["upstream"] == expected - {"top_k"}
    untouched = {"max_tokens", "num_overlap_msgs", "deferred", "top_k"} - expected
    assert {k: output.next_bundle.get(k) for k in untouched - {"top_k"}} == {k: bundle.get(k) for k in untouched - {"top_k"}}
    grouped = json.loads((folder / "grouped_attributions.json").read_text())
    candidates = {c for g in grouped.values() for a in g["assignments"] for c in [*a["candidates"], *a["upstream"]]}
    assert expected <= candidates
    for name in ("failed_cases.json", "error_attribution.json"):
        assert (folder / name).is_file()


def _cli(tmp_path, locomo_file, *extra):
    from toolkits.optimization.command import main

    config = tmp_path / "rag.json"
    config.write_text(json.dumps(FAKE_RAG))
    out = tmp_path / "opt"
    code = main(["--objective", "context_recall", "--config-path", str(config), "--dataset-path", str(locomo_file),
                 "--train-trajectories", "0", "--eval-trajectories", "1", "--max-sessions", "2",
                 "--context-budget", "300", "--trials-per-round", "3", "--optimization-dir", str(out),
                 "--bootstrap-samples", "50", "--no-progress", *extra])
    return code, out


@pytest.mark.slow
def test_run_optimization_context_recall_end_to_end_and_resume(tmp_path, locomo_file, capsys):
    code, out = _cli(tmp_path, locomo_file, "--rounds", "2")
    assert code == 0
    printed = capsys.readouterr()
    assert "held-out context recall at 300 tokens" in printed.out and "round 2:" in printed.err
    for k in (1, 2):
        folder = out / f"iteration_{k}"
        for name in ("failed_cases.json", "error_attribution.json", "grouped_attributions.json", "trials.json",
                     "iteration_summary.json", "memory_system_config.json", "memory_config.json"):
            assert (folder / name).is_file(), (k, name)
        summary = json.loads((folder / "iteration_summary.json").read_text())
        assert summary["objective"] == "context_recall" and summary["trajectory_indexes"] == [0]
        assert summary["objective_evaluations"] == 1 + summary["num_trials"]
        # the guided round's search state: one file per stage (a study, or the pattern search's scores)
        stages = {st["stage"] for st in summary["stages"]}
        assert {f.name for f in (out / "param_search").glob(f"iteration_{k}_*")} == {
            f"iteration_{k}_own.sqlite3" if st == "own" else f"iteration_{k}_upstream.json" for st in stages}
    report = json.loads((out / "final_evaluation.json").read_text())
    assert report["trajectories"] == ["locomo-2"] and report["trajectory_indexes"] == [1]
    recall = report["context_recall"]
    assert set(recall) == {"before", "after"} and {"micro", "macro"} <= set(recall["before"])
    assert report["metrics"]["context_recall"]["before"] == pytest.approx(recall["before"]["micro"])
    assert sum(report["outcome_counts"].values()) == report["num_questions"] == len(report["questions"])
    # a rerun finds every round complete and reports the same comparison
    assert _cli(tmp_path, locomo_file, "--rounds", "2")[0] == 0
    assert "all 2 rounds are complete" in capsys.readouterr().err
    assert json.loads((out / "final_evaluation.json").read_text())["context_recall"] == recall


def test_overlapping_training_and_held_out_conversations_exit_2(tmp_path, locomo_file, capsys):
    code, _ = _cli(tmp_path, locomo_file, "--eval-trajectories", "0")
    assert code == 2 and "disjoint" in capsys.readouterr().err
    with pytest.raises(SystemExit) as exc:
        _cli(tmp_path, locomo_file, "--context-budget", "0")
    assert exc.value.code == 2


def test_a_layer_without_message_text_is_refused(tmp_path, locomo_file, capsys):
    from toolkits.optimization.command import main

    config = tmp_path / "mem0.json"
    config.write_text(json.dumps({"layer_type": "Mem0", "llm_provider": "fake", "embedder_provider": "fake",
                                  "embedding_model_dims": 64}))
    code = main(["--objective", "context_recall", "--config-path", str(config), "--dataset-path", str(locomo_file),
                 "--optimization-dir", str(tmp_path / "o"), "--no-progress"])
    assert code == 2 and "NaiveRAG, Long-Context" in capsys.readouterr().err


@pytest.mark.slow
def test_a_config_proposed_by_the_search_round_trips_through_python_m_membase(tmp_path, locomo_file, capsys):
    from membase.cli import main as membase_main
    from toolkits.optimization.bundle import MemoryConfigBundle

    code, out = _cli(tmp_path, locomo_file, "--rounds", "1", "--search", "unguided", "--eval-trajectories", "none")
    assert code == 0
    summary = json.loads((out / "iteration_1" / "iteration_summary.json").read_text())
    assert summary["searched_parameters"] == ["max_tokens", "num_overlap_msgs", "deferred", "top_k"]
    trials = [t for t in json.loads((out / "iteration_1" / "trials.json").read_text()) if t["state"] == "COMPLETE"]
    proposed = MemoryConfigBundle.load(out / "iteration_1").with_updates(trials[0]["params"])
    folder = tmp_path / "proposed"
    path = proposed.export_memory_config(folder)
    run_dir = tmp_path / "membase_run"
    args = ["--layer-config", str(path), "--dataset", str(locomo_file), "--start-idx", "0", "--end-idx", "1",
            "--output-dir", str(run_dir), "--quiet", "--no-tracing"]
    assert membase_main(["construct", *args]) == 0
    assert membase_main(["search", *args, "--top-k", str(proposed.top_k)]) == 0
    saved = json.loads((run_dir / "memory" / "locomo-1" / "config.json").read_text())
    for name, value in trials[0]["params"].items():
        if name != "top_k":
            assert saved[name] == value
    results = json.loads((run_dir / "memory" / f"{proposed.top_k}_0_1.json").read_text())
    assert results and all(len(r["retrieved_memories"]) <= proposed.top_k for r in results)


def test_attribution_is_capped_to_a_seeded_sample_of_the_misses(tmp_path, slices):
    _, output, folder, stub = _round(tmp_path, slices[0], "memory_system.retrieve", trials=1, cap=3)
    failed = json.loads((folder / "failed_cases.json").read_text())
    assert len(failed) > 3 and len(stub.seen) == 3 == output.summary["num_cases_attributed"]
    ids = [c.query_full_node_id for c in stub.seen]
    assert ids == [c["query_full_node_id"] for c in failed if c["query_full_node_id"] in ids]  # input order kept
