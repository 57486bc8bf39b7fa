"""group_attributions: deterministic mapping of attributions to the target variables of their op."""

from __future__ import annotations

import pytest

from toolkits.optimization.grouping import group_attributions
from toolkits.optimization.records import Attribution
from toolkits.optimization.targets import Target

A = Target(field="field_a", variable="prompt-a")
B = Target(field="field_b", variable="prompt-b")

pytestmark = pytest.mark.filterwarnings("ignore:graph variable .prompt-a. has 2 versions")


def _op(graph, name, inputs, outputs):
    from smartcomment import comment_op

    comment_op(inputs=inputs, outputs=outputs, op_name=name, category="test", comment=name)
    return [o for o in graph.get_all_operations() if o.op_name == name][-1].op_id


@pytest.fixture
def graph_and_ops():
    from smartcomment import comment_graph, comment_session, comment_variable

    ops = {}
    with comment_graph(user_id="u", project_id="p") as graph, comment_session(category="memory_construction"):
        a = comment_variable("template a", to_runtime=True, id_strategy=lambda _: "prompt-a", category="prompt")
        b = comment_variable("template b", to_runtime=True, id_strategy=lambda _: "prompt-b", category="prompt")
        msg = comment_variable("hello", to_runtime=True, class_name="message")
        ops["consumes_a"] = _op(graph, "consumes_a", [a, msg], [("out1", {"class_name": "x"})])
        # b is consumed, a is only produced (an op that writes prompt a from prompt b)
        a2 = ("template a v2", {"id_strategy": lambda _: "prompt-a"})
        ops["consumes_b_produces_a"] = _op(graph, "consumes_b_produces_a", [b], [a2])
        ops["consumes_both"] = _op(graph, "consumes_both", [b, msg, a], [("out3", {"class_name": "x"})])
        ops["no_target"] = _op(graph, "no_target", [msg], [("out4", {"class_name": "x"})])
    return graph, ops


def _attr(op_id: str, reason: str = "") -> Attribution:
    return Attribution(error_type="ResponseError", op_id=op_id, reason=reason)


def test_consumed_variable_wins_then_target_order(graph_and_ops):
    graph, ops = graph_and_ops
    attrs = [_attr(ops[k], k) for k in ("consumes_a", "consumes_b_produces_a", "consumes_both", "no_target")]
    attrs.append(_attr("", "empty"))
    attrs.append(_attr("op-does-not-exist", "unknown"))
    groups = group_attributions(attrs, graph, [A, B])
    fields = [a.field for a in groups.assignments]
    assert fields == ["field_a", "field_b", "field_a", None, None, None]
    assert groups.assignments[1].consumed is True
    reasons = [r for _, r in groups.unoptimizable]
    assert "no optimization target" in reasons[0] and "names no operation" in reasons[1] and "not in the graph" in reasons[2]
    assert [a.reason for a in groups.by_field["field_a"]] == ["consumes_a", "consumes_both"]
    # the tie of `consumes_both` follows the order of the targets given
    assert group_attributions(attrs, graph, [B, A]).assignments[2].field == "field_b"
    assert groups.num_optimizable == 3 and set(groups.node_ids.values()) == {"field_a", "field_b"}
    assert groups.field_node_ids["field_a"].endswith("@2")  # the latest version of prompt-a


def test_grouping_is_deterministic_and_reports_missing_targets(graph_and_ops):
    graph, ops = graph_and_ops
    attrs = [_attr(op) for op in ops.values()] * 3
    missing = Target(field="field_c", variable="prompt-c")
    first = group_attributions(attrs, graph, [A, B, missing]).as_json()
    assert first == group_attributions(list(attrs), graph, [A, B, missing]).as_json()
    assert first["missing_targets"] == ["field_c"]


def test_shared_variable_between_targets_is_refused(graph_and_ops):
    graph, _ = graph_and_ops
    with pytest.raises(ValueError, match="share"):
        group_attributions([], graph, [A, Target(field="other", variable="prompt-a")])
