"""The guided round's traced run hands its memory to the objective: the incumbent is scored with no build.

The hit table read off a saved memory must equal the one a fresh build gives (NaiveRAG with the
hashing embedder, Long-Context), a save that cannot serve must fall back to a build, and a guided
round must build one layer fewer than before (its incumbent).
"""

from __future__ import annotations

import json
import shutil

import pytest

from toolkits.optimization.objective import ContextRecallObjective

RAG = {"retriever_name_or_path": "fake:64", "retriever_dim": 64, "num_overlap_msgs": 1}
LONG = {"context_window": 700}


@pytest.fixture(scope="module")
def conversations(locomo_file):
    from toolkits.optimization.sampling import load_full_dataset, select

    return select(load_full_dataset(locomo_file, max_sessions=2), [0, 1])


def _traced_run(dataset, layer_type, fields, folder):
    """The traced run the guided round makes (fixed answer, context cut), into ``folder``."""
    from membase.clients.fake import FunctionChatModel
    from toolkits.optimization.bundle import MemoryConfigBundle
    from toolkits.optimization.objective import BudgetedContextBuilder
    from toolkits.optimization.pipeline import PipelineSettings, run_pipeline

    bundle = MemoryConfigBundle.from_layer_config({"layer_type": layer_type, **fields})
    settings = PipelineSettings(top_k=10, qa_model=FunctionChatModel(lambda _m, **_k: "no answer", model="fixed"),
                                judge_model=None, metrics=("f1",), tracing=True, show_progress=False,
                                context_builder=BudgetedContextBuilder(300))
    return run_pipeline(bundle, dataset, folder, settings)


@pytest.fixture(scope="module")
def rag_run(conversations, tmp_path_factory):
    return _traced_run(conversations, "NaiveRAG", RAG, tmp_path_factory.mktemp("rag") / "run")


@pytest.fixture(scope="module")
def long_run(conversations, tmp_path_factory):
    return _traced_run(conversations, "Long-Context", LONG, tmp_path_factory.mktemp("long") / "run")


@pytest.mark.parametrize("layer_type, fields, run", [("NaiveRAG", RAG, "rag_run"), ("Long-Context", LONG, "long_run")])
def test_the_table_from_a_saved_memory_equals_a_fresh_builds(request, conversations, tmp_path, layer_type, fields,
                                                              run):
    folder = request.getfixturevalue(run).folder
    objective = ContextRecallObjective(conversations, layer_type, fields, budget=300, cache_dir=tmp_path)
    assert objective.adopt_saved_memory({}, folder, conversations)
    assert objective.builds == 0 and objective.adopted == 1
    adopted = objective.hit_table({})
    fresh = objective._build(dict(fields))
    assert adopted == fresh
    assert len(adopted) == len(objective.questions) and 0 < sum(h[-1] for h in adopted.values()) < len(adopted)
    assert objective.evaluate({}, 3).hits == {q: hits[2] for q, hits in fresh.items()} and objective.builds == 0
    # the on-disk table is the adopted one: a new objective on the same cache builds nothing either
    again = ContextRecallObjective(conversations, layer_type, fields, budget=300, cache_dir=tmp_path)
    assert again.hit_table({}) == fresh and again.builds == 0


def test_a_save_that_cannot_serve_falls_back_to_a_build(conversations, rag_run, tmp_path):
    objective = ContextRecallObjective(conversations, "NaiveRAG", RAG, budget=300)
    # another config, another layer, or other messages than the objective's: not this memory
    assert not objective.adopt_saved_memory({"num_overlap_msgs": 2}, rag_run.folder, conversations)
    assert not ContextRecallObjective(conversations, "Long-Context", {}, budget=300).adopt_saved_memory(
        {}, rag_run.folder, conversations)
    first = conversations.trajectories[0]
    cut = first.model_copy(update={"sessions": list(first.sessions)[:1]})
    other = type(conversations)(name=conversations.name, trajectories=[cut, *conversations.trajectories[1:]],
                                qa_pair_lists=list(conversations.qa_pair_lists))
    assert not objective.adopt_saved_memory({}, rag_run.folder, other)
    # one conversation's memory gone, or damaged
    broken = tmp_path / "run"
    shutil.copytree(rag_run.folder, broken)
    shutil.rmtree(broken / first.id)
    assert not objective.adopt_saved_memory({}, broken, conversations)
    (broken / first.id).mkdir()
    (broken / first.id / "config.json").write_text("{not json", encoding="utf-8")
    assert not objective.adopt_saved_memory({}, broken, conversations)
    assert objective.builds == 0 and objective.adopted == 0 and not objective._tables
    built = objective.evaluate({}, 5)  # builds as before, and the table is the fresh one
    assert objective.builds == 1
    fresh = ContextRecallObjective(conversations, "NaiveRAG", RAG, budget=300)
    assert fresh.adopt_saved_memory({}, rag_run.folder, conversations)
    assert fresh.evaluate({}, 5).hits == built.hits


def _guided_round(tmp_path, dataset, op_name, trials):
    """One guided round over ``RAG`` whose stub attribution blames ``op_name``; returns (summary, objective)."""
    from tests.optimization_params.test_loop import _StubAttribution
    from toolkits.optimization.bundle import MemoryConfigBundle
    from toolkits.optimization.loop import RoundContext
    from toolkits.optimization.param_loop import ParameterRoundStep, ParameterSearchSettings
    from toolkits.optimization.parameters import parameter_registry

    bundle = MemoryConfigBundle.from_layer_config({"layer_type": "NaiveRAG", **RAG})
    objective = ContextRecallObjective(dataset, "NaiveRAG", bundle.layer_fields(), budget=300)
    step = ParameterRoundStep(
        objective=objective, registry=parameter_registry(), search_root=tmp_path / "search",
        attribution_runner=_StubAttribution(op_name),
        settings=ParameterSearchSettings(budget=300, trials_per_round=trials, n_startup_trials=2, show_progress=False,
                                         max_attributed_cases=5, upstream_hops=0),
    )
    folder = tmp_path / "iteration_1"
    folder.mkdir()
    output = step(RoundContext(k=1, folder=folder, bundle=bundle, dataset=dataset, trajectory_indexes=[0]))
    trials_file = json.loads((folder / "trials.json").read_text(encoding="utf-8"))
    return output.summary, objective, trials_file


def _construction(point):
    """A point's construction settings (``top_k`` only reads the built memory)."""
    return json.dumps({k: v for k, v in point.items() if k != "top_k"}, sort_keys=True)


@pytest.mark.parametrize("op_name", ["memory_system.retrieve", "memory_system.message_buffer_update"])
def test_a_guided_round_builds_its_incumbent_only_in_the_traced_run(tmp_path, conversations, op_name):
    pytest.importorskip("optuna", reason="the parameter loop needs the optim extra (optuna)")
    from toolkits.optimization.sampling import select

    summary, objective, trials = _guided_round(tmp_path, select(conversations, [0]), op_name, trials=3)
    assert summary["incumbent_memory_from_traced_run"] is True
    # the incumbent's memory came from the traced run; every other construction point scored is one build
    others = {_construction(t["point"]) for t in trials if t["state"] == "COMPLETE"}
    others.discard(_construction(summary["incumbent"]["params"]))
    assert objective.adopted == 1 and objective.builds == len(others)
    if op_name == "memory_system.retrieve":
        assert set(summary["searched_parameters"]) == {"top_k"}
        assert objective.builds == 0  # before the reuse, this round built the incumbent once
    else:
        assert others and objective.builds == len(others)


def test_evermemos_scores_the_same_from_a_saved_memory_as_from_its_own_build(conversations, tmp_path):
    from toolkits.optimization.evermemos_objective import EVERMEMOS_OFFLINE_FIELDS, EverMemOSRecallObjective
    from toolkits.optimization.sampling import select

    one = select(conversations, [0])
    run = _traced_run(one, "EverMemOS", {**EVERMEMOS_OFFLINE_FIELDS, "retrieval_config": {"retrieval_mode": "hybrid"}},
                      tmp_path / "run")
    adopted, built = EverMemOSRecallObjective(one, budget=1000), EverMemOSRecallObjective(one, budget=1000)
    try:
        assert not adopted.adopt_saved_memory({}, tmp_path / "elsewhere", one)  # nothing saved there
        # the traced run's retrieval config is not part of the memory: any retrieval point reads it
        assert adopted.adopt_saved_memory({"retrieval_config": {"retrieval_mode": "bm25_only"}}, run.folder, one)
        assert adopted.adopted == 1
        for mode in ("agentic", "hybrid", "bm25_only", "emb_only"):
            for top_k in (1, 3):
                point = {"retrieval_config": {"retrieval_mode": mode}}
                assert adopted.evaluate(point, top_k).hits == built.evaluate(point, top_k).hits, (mode, top_k)
        assert adopted.builds == 0 and built.builds == 1
        assert 0 < built.evaluate({}, 3).micro < 1
    finally:
        adopted.close()
        built.close()
    assert (run.folder / one.trajectories[0].id / "config.json").is_file()  # close leaves the run's memory alone
