"""The answering step's context budget: the cut, its trace, and how an attribution there reaches it."""

from __future__ import annotations

import json

import pytest

from membase.clients import FunctionChatModel
from membase.runners import EvaluationRunner, EvaluationRunnerConfig
from membase.utils.tokens import count_tokens
from tests.membase._helpers import FIXED_ANSWER, conv26_two_sessions, judge_by_reference, run_pipeline

BUDGET = 12
RAG = {"retriever_name_or_path": "fake:32", "retriever_dim": 32}


@pytest.fixture(scope="module")
def searched(locomo_path, tmp_path_factory):
    out = tmp_path_factory.mktemp("budget")
    dataset = conv26_two_sessions(locomo_path, max_questions=3)
    _, search, plain = run_pipeline("NaiveRAG", RAG, dataset, out, top_k=3)
    return out, search, plain


def _evaluate(out, search, budget):
    seen = []

    def qa(messages, **_kw):
        seen.append(messages[-1]["content"])
        return FIXED_ANSWER

    runner = EvaluationRunner(
        EvaluationRunnerConfig(search_results_path=str(search.results_path), traced_data_save_dir=str(out / "traced"),
                               show_progress=False, context_budget=budget, layer_type="NaiveRAG"),
        qa_model=FunctionChatModel(qa, model="fake-qa"), judge_model=FunctionChatModel(judge_by_reference),
    )
    runner.run()
    from smartcomment.runtime.network import ExecNetwork

    return ExecNetwork.from_file(out / "traced" / "locomo-1" / "graph_evaluation.json"), seen


def test_the_budget_cuts_the_context_and_is_traced_as_the_input_of_the_cut(searched):
    out, search, _ = searched
    graph, prompts = _evaluate(out, search, BUDGET)
    budget = graph.get_latest_variable("parameter:answer_context_budget")
    assert budget.raw_value == str(BUDGET)
    assert budget.metadata == {"tunable": True, "kind": "int", "scope": "answer", "layer_type": "NaiveRAG",
                               "low": 64, "high": 8192, "log": True}
    contexts = graph.search_variables(class_name="context")
    assert len(prompts) == 3 and 1 <= len(contexts) <= 3  # equal cut contexts are one node (identity by value)
    for node in contexts:
        meta = node.metadata
        assert meta["cut"] and meta["tokens_after_cut"] <= BUDGET < meta["tokens_before_cut"]
    # the budget feeds exactly the cuts: one edge to each cut context, inside the question-answering op
    edges = [e for e in graph.get_all_edges() if e.source_full_node_id == budget.full_node_id]
    assert {e.target_full_node_id for e in edges} == {n.full_node_id for n in contexts}
    assert {graph.get_operation(e.op_id).op_name for e in edges} == {"question-answering"}
    assert all(count_tokens(p.split("### Memory", 1)[1]) <= BUDGET + 5 for p in prompts)


def test_without_a_budget_nothing_is_cut_or_traced(searched):
    out, search, plain = searched
    graph, prompts = _evaluate(out, search, None)
    assert not [n for n in graph.search_variables(class_name="parameter") if n.name == "answer_context_budget"]
    assert not graph.search_variables(class_name="uncut_context")
    assert all(count_tokens(p) > 3 * BUDGET for p in prompts)
    assert json.loads(plain.output_path.read_text())  # the helper's default run answered too


def test_an_attribution_at_an_op_that_cut_its_context_also_goes_to_the_budget(searched):
    from toolkits.optimization.context_cuts import op_cut_its_context, route_context_cuts
    from toolkits.optimization.grouping import group_attributions
    from toolkits.optimization.parameters import parameter_registry

    out, search, _ = searched
    graph, _ = _evaluate(out, search, BUDGET)
    qa_ops = [o.op_id for o in graph.get_all_operations() if o.op_name == "question-answering"]
    retrieve = next(o.op_id for o in graph.get_all_operations() if o.op_name == "memory_system.retrieve")
    assert qa_ops and all(op_cut_its_context(graph, op) for op in qa_ops) and not op_cut_its_context(graph, retrieve)
    attributions = [{"error_type": "ResponseError", "op_id": qa_ops[0], "reason": "r"},
                    {"error_type": "RetrievalError", "op_id": retrieve, "reason": "r"}]
    targets = parameter_registry().for_layer("NaiveRAG")
    groups = group_attributions(attributions, graph, targets)
    assert [a.field for a in groups.assignments] == ["question_answering_prompt", "top_k"]
    routed = route_context_cuts(groups, attributions, graph, targets)
    assert routed == [{"index": 0, "op_id": qa_ops[0], "field": "answer_context_budget"}]
    assert [a.op_id for a in groups.by_field["answer_context_budget"]] == [qa_ops[0]]
    assert [a.op_id for a in groups.by_field["question_answering_prompt"]] == [qa_ops[0]]  # the prompt keeps it
