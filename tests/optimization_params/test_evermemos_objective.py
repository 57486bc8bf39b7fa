"""The EverMemOS recall objective scores an offline build (fake model, hashing embedder); a miss
attributed to EverMemOS's retrieval becomes a parameter task over its retrieval parameters; the
benchmark runs its EverMemOS rows."""

from __future__ import annotations

import json

import pytest

from membase.types import MemoryDataset, Message, QuestionAnswerPair, Session, Trajectory

# Two sessions a week apart: the fake's boundary judge closes the first, so there are two episodes.
FIRST = [
    ("Rosa", "My sister Ines opened a bakery on Harbor Street.", "2023-04-02T10:00:00"),
    ("Tomas", "Does she bake almond rolls on weekends?", "2023-04-02T10:01:00"),
]
SECOND = [
    ("Rosa", "I adopted a grey kitten called Pebble from the shelter.", "2023-04-09T18:00:00"),
    ("Tomas", "Pebble will love the sunny window in your flat.", "2023-04-09T18:01:00"),
]
RETRIEVAL_PARAMETERS = {"top_k", "retrieval_config.retrieval_mode", "retrieval_config.bm25_top_n",
                        "retrieval_config.emb_top_n", "retrieval_config.rrf_k"}


def _messages(rows, session):
    return [Message(id=f"D{session}:{i}", name=n, content=t, timestamp=ts) for i, (n, t, ts) in enumerate(rows, 1)]


def _qa(qa_id, question, evidence):
    return QuestionAnswerPair(id=qa_id, question=question, golden_answers=["x"],
                              metadata={"evidence": evidence, "question_type": "single-hop"})


@pytest.fixture(scope="module")
def dataset():
    trajectory = Trajectory(id="conv-1", sessions=[Session(id="S1", messages=_messages(FIRST, 1)),
                                                    Session(id="S2", messages=_messages(SECOND, 2))])
    qas = [_qa("q-bakery", "Which street is the bakery of Ines on?", ["D1:1"]),
           _qa("q-kitten", "What is the name of the grey kitten Rosa adopted?", ["D2:1"]),
           _qa("q-both", "Did Rosa talk about the bakery of Ines and the kitten Pebble?", ["D1:1", "D2:1"]),
           _qa("q-adv", "What did Tomas adopt?", ["D2:1"])]
    qas[-1].metadata["question_type"] = "adversarial"
    return MemoryDataset(trajectories=[trajectory], qa_pair_lists=[qas])


def test_the_objective_scores_an_offline_evermemos_build(dataset):
    from toolkits.optimization.evermemos_objective import EverMemOSRecallObjective

    objective = EverMemOSRecallObjective(dataset, budget=1000)
    try:
        assert [q.qa_id for q in objective.questions] == ["q-bakery", "q-kitten", "q-both"]  # adversarial skipped
        assert objective.questions[0].evidence_texts == ("Rosa said: My sister Ines opened a bakery on Harbor Street.",)
        bm25 = {"retrieval_config": {"retrieval_mode": "bm25_only"}}
        one = objective.evaluate(bm25, top_k=1)
        # one episode: each single-session question finds its own, the two-session one cannot
        assert one.hits == {"q-bakery": True, "q-kitten": True, "q-both": False}
        assert objective.evaluate(bm25, top_k=2).micro == 1.0
        for mode in ("agentic", "hybrid", "emb_only"):
            assert objective.evaluate({"retrieval_config": {"retrieval_mode": mode}}, top_k=2).micro == 1.0
        assert objective.builds == 1  # retrieval parameters never rebuild the memory
        tight = EverMemOSRecallObjective(dataset, budget=12)  # no episode fits whole
        assert tight.evaluate(bm25, top_k=2).micro == 0.0
        tight.close()
        with pytest.raises(ValueError, match="top_k"):
            objective.evaluate(bm25, top_k=0)
    finally:
        objective.close()


def test_the_objective_refuses_a_real_model(dataset):
    from toolkits.optimization.evermemos_objective import EverMemOSRecallObjective

    with pytest.raises(ValueError, match="llm_config.provider must be 'fake'"):
        EverMemOSRecallObjective(dataset, {"llm_config": {"provider": "openai", "model": "m"}})


@pytest.fixture(scope="module")
def traced(tmp_path_factory, dataset):
    from membase.layers import build_layer_config
    from membase.layers.evermemos.layer import EverMemOSLayer
    from smartcomment import comment_graph, comment_session, comment_variable, current_context
    from toolkits.optimization.evermemos_objective import EVERMEMOS_OFFLINE_FIELDS

    config = build_layer_config("EverMemOS", user_id="conv-1", save_dir=str(tmp_path_factory.mktemp("ever")),
                                **EVERMEMOS_OFFLINE_FIELDS, retrieval_config={"retrieval_mode": "hybrid"})
    layer = EverMemOSLayer(config)
    with comment_graph(user_id="conv-1", project_id="EverMemOS", strict=True) as graph:
        with comment_session(session_id="s1", category="memory_construction"):
            for message in dataset.trajectories[0].messages:
                layer.add_message(message)
        with comment_session(category="memory_construction"):
            layer.flush()
        with comment_session(category="memory_search"):
            comment_variable("Which street is the bakery on?", variable_name="query", id_strategy=lambda _: "q-1",
                             class_name="query", category="message & query", metadata={"evidence": ["D1:1"]})
            layer.retrieve("Which street is the bakery on?", k=1)
            current_context().remove_variable("query")
    return graph


def _attributed(graph, op_name):
    from toolkits.optimization.grouping import group_attributions
    from toolkits.optimization.parameters import attributed_parameters, parameter_registry
    from toolkits.optimization.records import Attribution

    registry = parameter_registry()
    op_id = [op for op in graph.get_all_operations() if op.op_name == op_name][-1].op_id
    groups = group_attributions([Attribution(error_type="RetrievalError", op_id=op_id, reason="the unit was missed")],
                                graph, registry.for_layer("EverMemOS"), upstream_hops=2)
    return groups, attributed_parameters([groups], registry, "EverMemOS")


def test_a_retrieval_miss_on_evermemos_is_a_task_over_its_retrieval_parameters(traced):
    groups, counts = _attributed(traced, "memory_system.hybrid_retrieval")
    assert groups.assignments[0].field == "top_k"
    assert set(counts) == RETRIEVAL_PARAMETERS  # guidance chooses among all five, not top_k alone


def test_an_extraction_miss_on_evermemos_is_a_prompt_task_with_no_parameter(traced):
    groups, counts = _attributed(traced, "memory_system.extract_memory")
    assert groups.assignments[0].field == "prompt_overrides.episode-extraction-prompt-template"
    assert counts == {}


@pytest.mark.slow
def test_the_benchmark_runs_its_evermemos_rows(tmp_path, locomo_file):
    pytest.importorskip("optuna", reason="the searches need the optim extra (optuna)")
    from benchmarks.optimization_locomo import main

    out = tmp_path / "results.json"
    code = main(["--layer", "EverMemOS", "--dataset-path", str(locomo_file), "--train", "0", "--held-out", "1",
                 "--max-sessions", "2", "--budget", "2000", "--top-k", "1", "--evaluations", "4", "--rounds", "2",
                 "--max-attributed-cases", "3", "--methods", "default,guided,unguided", "--work-dir", str(tmp_path),
                 "--output-path", str(out), "--no-progress"])
    assert code == 0
    rows = json.loads(out.read_text())["rows"]
    assert json.loads(out.read_text())["meta"]["layer"] == "EverMemOS"
    assert set(rows["unguided"]["searched"]) == RETRIEVAL_PARAMETERS
    guided = rows["guided"]["rounds"][0]
    # the traced run judges misses as the objective does: its recall is the incumbent's
    assert guided["num_failed_queries"] > 0 and guided["traced_run_recall"] == guided["incumbent"]["micro"] < 1
    # guided spends at most the unguided budget (a round whose search space is exhausted stops early)
    assert 2 <= rows["guided"]["evaluations"] <= rows["unguided"]["evaluations"] == 4
    assert set(rows["guided"]["searched"]) & RETRIEVAL_PARAMETERS - {"top_k"}  # more than top_k was in play


def test_the_benchmark_refuses_an_evermemos_config_with_a_real_model(tmp_path, locomo_file, capsys):
    from benchmarks.optimization_locomo import main

    config = tmp_path / "ever.json"
    config.write_text(json.dumps({"layer_type": "EverMemOS", "llm_config": {"provider": "openai", "model": "m"}}))
    code = main(["--layer-config", str(config), "--dataset-path", str(locomo_file), "--work-dir", str(tmp_path / "w"),
                 "--no-progress"])
    assert code == 2
    assert capsys.readouterr().err.strip().splitlines()[-1] == (
        f"error: {config}: the EverMemOS recall objective runs offline: llm_config.provider must be 'fake'")
    assert not (tmp_path / "w" / "results.json").exists()
