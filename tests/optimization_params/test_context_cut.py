"""A context cut becomes a budget task: Long-Context drops the oldest messages beyond its
``context_window``; evidence_flow blames that update for the questions whose evidence was dropped,
and the guided round searches the window (the cut's own parameter), nothing else."""

from __future__ import annotations

import json

import pytest

pytest.importorskip("optuna", reason="the parameter loop needs the optim extra (optuna)")

pytestmark = pytest.mark.slow  # a traced Long-Context run and evidence_flow on three misses (~20 s)


def test_a_long_context_window_cut_is_attributed_to_the_window_and_searched(tmp_path, locomo_file):
    from toolkits.optimization.bundle import MemoryConfigBundle
    from toolkits.optimization.loop import RoundContext
    from toolkits.optimization.objective import ContextRecallObjective
    from toolkits.optimization.param_loop import ParameterRoundStep, ParameterSearchSettings
    from toolkits.optimization.parameters import parameter_registry
    from toolkits.optimization.sampling import load_full_dataset, select
    from toolkits.runner import MemTraceConfig, MemTraceRunner

    dataset = select(load_full_dataset(locomo_file, max_sessions=2), [0])
    bundle = MemoryConfigBundle.from_layer_config({"layer_type": "Long-Context", "context_window": 400})
    objective = ContextRecallObjective(dataset, "Long-Context", bundle.layer_fields(), budget=4000)
    step = ParameterRoundStep(
        objective=objective, registry=parameter_registry(), search_root=tmp_path / "search",
        attribution_runner=MemTraceRunner(MemTraceConfig(exploration_strategy="evidence_flow")),
        settings=ParameterSearchSettings(budget=4000, trials_per_round=3, n_startup_trials=2, show_progress=False,
                                         max_attributed_cases=3),
    )
    folder = tmp_path / "iteration_1"
    folder.mkdir()
    summary = step(RoundContext(k=1, folder=folder, bundle=bundle, dataset=dataset, trajectory_indexes=[0])).summary
    assert summary["num_failed_queries"] > 3 == summary["num_cases_attributed"]
    assert summary["attributions_by_op_name"] == {"memory_system.memory_update": 3}
    assert [(p["name"], p["own"]) for p in summary["ranked_parameters"]] == [("context_window", 3)]
    assert summary["searched_parameters"] == ["context_window"]
    trials = json.loads((folder / "trials.json").read_text())
    assert len(trials) == 3 and all(set(t["params"]) == {"context_window"} for t in trials)
    # a wider window keeps the dropped evidence: the round proposes one and it scores higher
    assert summary["accepted"] and summary["next_params"]["context_window"] > 400
    assert summary["metrics"]["context_recall"] > summary["incumbent"]["micro"]
