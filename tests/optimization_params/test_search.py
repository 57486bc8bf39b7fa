"""The optimizer registry dispatches by variable kind; the Optuna search is seeded, bounded, resumable."""

from __future__ import annotations

import pytest

pytest.importorskip("optuna", reason="the parameter search needs the optim extra (optuna)")

from membase.layers.parameters import TUNABLE_PARAMETERS, TunableParameter, tunable_parameters  # noqa: E402
from smartcomment import comment_graph, comment_session, comment_variable  # noqa: E402
from toolkits.optimization.parameters import (  # noqa: E402
    layer_parameter_targets,
    parameter_registry,
    parameter_spec,
    parameter_targets,
)
from toolkits.optimization.search import (  # noqa: E402
    BAYESIAN_TPE,
    CATEGORICAL_TPE,
    InfeasibleConfig,
    ParameterSearch,
    SearchSpaceMismatch,
    optimizer_for,
)
from toolkits.optimization.targets import TEXTUAL_GRADIENT  # noqa: E402

RAG = {p.name: p for p in tunable_parameters("NaiveRAG")}


def _objective(params):
    if params["deferred"] and params["max_tokens"] < 100:
        raise InfeasibleConfig("deferred documents below 100 tokens")
    return -abs(params["top_k"] - 17) - 0.5 * abs(params["num_overlap_msgs"] - 2) + (0.3 if params["deferred"] else 0)


def test_registry_dispatches_by_variable_kind():
    from membase.layers.parameters import ParameterTracer

    with comment_graph(user_id="u", project_id="NaiveRAG"), comment_session(category="memory_search"):
        prompt = comment_variable("Question: $question\n$context", to_runtime=True,
                                  id_strategy=lambda _: "question-answering-prompt", category="prompt")
        top_k, deferred = ParameterTracer("NaiveRAG").handles({"top_k": 5, "deferred": False})
        plain = comment_variable("a memory", to_runtime=True, class_name="memory")
    assert optimizer_for(prompt).name == TEXTUAL_GRADIENT
    assert optimizer_for(top_k).name == BAYESIAN_TPE
    assert optimizer_for(deferred).name == CATEGORICAL_TPE
    assert optimizer_for(TunableParameter("x", "float", low=0.0, high=1.0)).name == BAYESIAN_TPE
    assert optimizer_for("categorical").name == CATEGORICAL_TPE
    with pytest.raises(ValueError, match="neither"):
        optimizer_for(plain)
    with pytest.raises(KeyError):
        optimizer_for("tensor")
    with pytest.raises(TypeError):
        optimizer_for(prompt).distribution(RAG["top_k"])  # the prompt optimizer searches no numbers


def test_every_parameter_target_names_the_optimizer_of_its_kind_after_the_prompts():
    registry = parameter_registry()
    fields = [t.field for t in registry]
    assert fields.index("question_answering_prompt") < fields.index("top_k")  # prompts keep priority
    for target in parameter_targets():
        spec = parameter_spec(target)
        assert target.variable == f"parameter:{spec.name}" and target.kind == "parameter"
        assert optimizer_for(target) is optimizer_for(spec)
        assert target.problems(spec.low if spec.kind != "categorical" else spec.choices[0]) == []
        assert target.problems("nonsense")
    # the answering step's budget is a target of the retrieving layers (the prompt loop's parameter
    # tasks), left out of the parameter loop's search space
    assert {t.field for t in registry.for_layer("NaiveRAG", kinds=("parameter",))} == {*RAG, "answer_context_budget"}
    assert [t.field for t in registry.for_layer("Mem0", kinds=("parameter",))] == ["top_k", "answer_context_budget"]
    assert {t.field for t in layer_parameter_targets(registry, "NaiveRAG")} == set(RAG)
    assert [t.field for t in layer_parameter_targets(registry, "Long-Context")] == ["context_window"]
    with pytest.raises(ValueError):
        parameter_spec(registry.get("question_answering_prompt"))


def test_search_resumes_after_an_interruption_with_the_same_next_trial(tmp_path):
    def search(seed=3, path=None):
        return ParameterSearch(RAG, storage_path=path, seed=seed, n_startup_trials=3)

    straight = search().run(_objective, 9)  # in memory, never interrupted
    path = tmp_path / "study.sqlite3"
    search(path=path).run(_objective, 4)  # a first launch asked for fewer trials
    calls = []

    def interrupted(params):
        calls.append(params)
        if len(calls) == 2:
            raise KeyboardInterrupt  # killed during the 6th trial's evaluation (a TPE trial)
        return _objective(params)

    with pytest.raises(KeyboardInterrupt):
        search(path=path).run(interrupted, 9)
    resumed = search(path=path).run(_objective, 9)
    assert [t["params"] for t in resumed.trials] == [t["params"] for t in straight.trials]
    assert [t["value"] for t in resumed.trials] == [t["value"] for t in straight.trials]
    assert [t["params"] for t in search(seed=4).run(_objective, 9).trials] != [t["params"] for t in straight.trials]


def test_a_stored_study_refuses_another_space_or_seed(tmp_path):
    ParameterSearch(RAG, storage_path=tmp_path / "s.sqlite3", seed=1).run(_objective, 2)
    with pytest.raises(SearchSpaceMismatch):
        ParameterSearch({"top_k": RAG["top_k"]}, storage_path=tmp_path / "s.sqlite3", seed=1).study()
    with pytest.raises(SearchSpaceMismatch):
        ParameterSearch(RAG, storage_path=tmp_path / "s.sqlite3", seed=2).study()


def test_proposals_respect_bounds_and_choices_and_infeasible_ones_fail():
    specs = {p.name: p for params in TUNABLE_PARAMETERS.values() for p in params}
    seen = []

    def objective(params):
        seen.append(params)
        return float(sum(hash(str(v)) % 7 for v in params.values()))

    outcome = ParameterSearch(specs, seed=0, n_startup_trials=5).run(objective, 25)
    assert len(outcome.trials) == 25 and len(seen) == 25
    for params in seen:
        assert set(params) == set(specs)
        for name, value in params.items():
            assert specs[name].contains(value), (name, value)
            if specs[name].kind == "int":
                assert isinstance(value, int) and not isinstance(value, bool)
    failing = ParameterSearch(RAG, seed=0, n_startup_trials=4).run(_objective, 20)
    failed = [t for t in failing.trials if t["state"] == "FAIL"]
    assert failed and all("100 tokens" in t["error"] for t in failed) and len(failing.trials) == 20
    assert failing.best["state"] == "COMPLETE"


def test_a_warm_start_point_informs_tpe_but_is_neither_a_trial_nor_the_best(tmp_path):
    # TPE models the history from the first trial (no random start-up), the incumbent included
    space = {"top_k": RAG["top_k"]}
    incumbent = ({"top_k": 17, "max_tokens": None}, 10.0)  # a point outside the space is left out
    path = tmp_path / "warm.sqlite3"
    warm = ParameterSearch(space, storage_path=path, seed=5, n_startup_trials=1, warm_start=[incumbent])
    outcome = warm.run(lambda p: -abs(p["top_k"] - 17), 4)
    assert len(outcome.trials) == 4 and all("warm_start" not in t for t in outcome.trials)
    assert outcome.best["value"] <= 0 < 10.0  # the warm point's value is not a result of this search
    cold = ParameterSearch(space, seed=5, n_startup_trials=1).run(lambda p: -abs(p["top_k"] - 17), 4)
    assert [t["params"] for t in outcome.trials] != [t["params"] for t in cold.trials]
    # a resumed study does not add the warm point twice and finds its trials complete
    again = ParameterSearch(space, storage_path=path, seed=5, n_startup_trials=1, warm_start=[incumbent])
    assert len(again.study().get_trials()) == 5 and again.run(lambda p: 0.0, 4).trials == outcome.trials


def test_a_stop_rule_ends_the_search_early_and_a_rerun_stops_at_the_same_trial(tmp_path):
    path = tmp_path / "stop.sqlite3"

    def stop(outcome):
        return len(outcome.trials) >= 2

    first = ParameterSearch(RAG, storage_path=path, seed=1, n_startup_trials=2).run(_objective, 9, stop=stop)
    assert len(first.trials) == 2
    calls = []
    rerun = ParameterSearch(RAG, storage_path=path, seed=1, n_startup_trials=2).run(
        lambda p: calls.append(p) or _objective(p), 9, stop=stop)
    assert not calls and rerun.trials == first.trials
