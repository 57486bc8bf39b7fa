"""CCTraceNotebook: the four tools, their error payloads, the hint and finish_attribution (§4.3)."""

from __future__ import annotations

import json

import pytest

from obstrace import CCTraceNotebook, EvidenceRow, flatten_execution_graph
from obstrace.notebook import ERROR_TYPES, MAX_WINDOW_CHARS

REASON = "The extraction read the Sweden message but stored nothing; fixing it rescues the answer."


@pytest.fixture()
def notebook(bench_case):
    graph, case, _ = bench_case
    return CCTraceNotebook.from_graph(graph, case.source_evidence_full_node_ids)


def test_error_types_match_the_shared_schema():
    from graphtrace import ERROR_TYPES as SHARED

    assert ERROR_TYPES == SHARED


def test_inspect_trace_summarises_the_log(notebook):
    payload = notebook.inspect_trace()
    assert payload["operation_count"] == 16 and payload["log_char_count"] == len(notebook.text)
    assert len(payload["first_ops"]) == 8 and len(payload["last_ops"]) == 8
    assert payload["first_ops"][0]["order"] == 0 and payload["last_ops"][-1]["order"] == 15
    assert payload["last_ops"][-1]["char_end"] == len(notebook.text)
    assert notebook.step == 1


def test_grep_log_searches_the_full_blocks(notebook, bench_case):
    _, _, annotation = bench_case
    payload = notebook.grep_log(pattern="sweden", max_matches=100)
    assert payload["pattern"] == "sweden" and payload["match_count"] == len(payload["matches"]) > 0
    assert {m["section"] for m in payload["matches"]} == {"full"}
    assert annotation["final_op_id"] in payload["matched_op_ids"]
    assert payload["matched_op_ids"] == list(dict.fromkeys(m["op_id"] for m in payload["matches"]))
    assert notebook.grep_log(pattern="Sweden", case_sensitive=True)["match_count"] <= payload["match_count"]


def test_grep_log_caps_the_payload_size(bench_case):
    graph, _, _ = bench_case
    small = CCTraceNotebook.from_graph(graph, max_payload_chars=2_000)
    payload = small.grep_log(pattern="e", max_matches=200, surrounding_chars=200)
    assert "truncated" in payload and payload["match_count"] >= 1
    assert len(json.dumps(payload["matches"])) <= 2_000 + 10 * payload["match_count"]


@pytest.mark.parametrize(
    ("tool", "arguments", "message"),
    [
        ("grep_log", {}, "`pattern` must be a non-empty string"),
        ("grep_log", {"pattern": ""}, "`pattern` must be a non-empty string"),
        ("grep_log", {"pattern": "a", "regex": "yes"}, "`regex` must be true or false"),
        ("grep_log", {"pattern": "a", "max_matches": 0}, "`max_matches` must be >= 1"),
        ("grep_log", {"pattern": "a", "max_matches": True}, "`max_matches` must be an integer"),
        ("grep_log", {"pattern": "a", "surrounding_chars": -1}, "`surrounding_chars` must be >= 0"),
        ("grep_log", {"pattern": "(", "regex": True}, "invalid regular expression"),
        ("grep_log", {"pattern": "a", "case_senstive": True}, "unknown argument(s) ['case_senstive']"),
        ("view_log_window", {}, "`offset` is required"),
        ("view_log_window", {"offset": 0}, "`offset` must be >= 1"),
        ("view_log_window", {"offset": 1, "limit": 0}, "`limit` must be >= 1"),
        ("view_log_window", {"offset": "1"}, "`offset` must be an integer"),
        ("view_operation", {}, "give `op_id` or `op_index`"),
        ("view_operation", {"op_id": "op-nope"}, "operation 'op-nope' is not in the trace"),
        ("view_operation", {"op_index": 16}, "operation_count=16"),
        ("view_operation", {"op_index": -1}, "out of range"),
        ("view_operation", {"op_index": 1.5}, "`op_index` must be an integer"),
        ("inspect_trace", {"verbose": True}, "inspect_trace accepts no arguments"),
    ],
)
def test_malformed_arguments_return_the_documented_error_payload(notebook, tool, arguments, message):
    payload = getattr(notebook, tool)(**arguments)
    assert set(payload) == {"tool", "error", "arguments"}
    assert payload["tool"] == tool and payload["arguments"] == arguments
    assert payload["error"].startswith("Error: ") and message in payload["error"]
    assert notebook.step == 1


def test_view_log_window_paginates_the_whole_log(notebook):
    total = len(notebook.text)
    first = notebook.view_log_window(offset=1, limit=100)
    assert first == {"content": notebook.text[:100],
                     "status": f"Characters 1-100 of {total} returned. Call again with offset=101."}
    last = notebook.view_log_window(offset=total - 9, limit=50)
    assert last["content"] == notebook.text[-10:] and last["status"] == f"Characters {total - 9}-{total} of {total} returned."
    assert notebook.view_log_window(offset=total + 1) == {
        "content": "", "status": f"No content from char {total + 1}; total chars={total}."}
    assert len(notebook.view_log_window(offset=1, limit=10**9)["content"]) == min(total, MAX_WINDOW_CHARS)


def test_view_operation_by_id_wins_over_index_and_paginates(notebook):
    block = notebook.index.blocks[3]
    payload = notebook.view_operation(op_id=block.op_id, op_index=0, offset=5, limit=20)
    assert payload["op_id"] == block.op_id and payload["order"] == 3
    assert payload["content"] == block.full_text[4:24]
    assert payload["status"].startswith(f"Characters 5-24 of {len(block.full_text)} returned.")
    assert notebook.view_operation(op_index=3)["content"] == block.full_text


def test_finish_attribution_validates_every_field(notebook, bench_case):
    _, _, annotation = bench_case
    op_id = annotation["final_op_id"]
    assert notebook.finish_attribution("ExtractionError", f" {op_id} ", REASON) == {
        "error_type": "ExtractionError", "op_id": op_id, "reason": REASON}
    assert "error_type must be one of" in notebook.finish_attribution("Oops", op_id, REASON)["error"]
    assert "non-empty" in notebook.finish_attribution("UpdateError", "  ", REASON)["error"]
    assert "not in the trace" in notebook.finish_attribution("UpdateError", "op-nope", REASON)["error"]
    short = notebook.finish_attribution("UpdateError", op_id, "   too short   ")
    assert short["error"].startswith("Error: the reason is too short") and "locally" in short["error"]


def test_hint_changes_after_the_first_tool_and_lists_evidence(notebook, bench_case):
    graph, _, _ = bench_case
    first = notebook.hint()
    assert first.startswith("<system-hint>\n") and first.endswith("\n</system-hint>")
    assert "call inspect_trace" in first
    # the paper's ablation: evidence by content and time only, no id, no lineage
    evidence = graph.get_variable("U1:D2:2@1")
    assert f"### Source Evidence 1\ncreated_at: {evidence.created_at}\nvalue: " in first
    assert "U1:D2:2@1" not in first and "full_node_id" not in first and "touching" not in first
    assert not any(op.op_id in first for op in graph.get_all_operations())
    notebook.view_log_window(offset=1)
    later = notebook.hint()
    assert "call inspect_trace" not in later and "do not repeat searches" in later
    assert "### Source Evidence 1" in later


def test_identities_are_an_opt_in_that_adds_ids_and_lineage(bench_case):
    graph, case, _ = bench_case
    ours = CCTraceNotebook.from_graph(graph, case.source_evidence_full_node_ids, identities=True)
    hint = ours.hint()
    assert "### Source Evidence 1\nfull_node_id: U1:D2:2@1\ncreated_at: " in hint
    touching = [op.op_id for op in graph.get_operations_by_variable("U1:D2:2@1")]
    assert f"operations touching it: {', '.join(touching)}\n" in hint
    assert "<full_node_id>U1:D2:2@1</full_node_id>" in ours.text


def test_hint_shows_at_most_eight_evidence_rows_and_clips_long_values():
    rows = [EvidenceRow(rank=i, created_at="t", value="v" * 5000) for i in range(1, 11)]
    hint = CCTraceNotebook("### Operation op-a", rows).hint()
    assert hint.count("### Source Evidence") == 8 and "### Source Evidence 9" not in hint
    assert "[3000 more characters]" in hint
    assert "Source evidence" not in CCTraceNotebook("### Operation op-a").hint()


def test_unknown_evidence_ids_are_skipped_with_a_warning(bench_case):
    graph, _, _ = bench_case
    with pytest.warns(UserWarning, match="'nope@1' is not in the graph"):
        notebook = CCTraceNotebook.from_graph(graph, ["nope@1", "U1:D2:2@1"])
    assert [(r.rank, r.full_node_id) for r in notebook.evidence_rows] == [(1, "U1:D2:2@1")]


def test_from_graph_uses_the_whole_identity_free_log_by_default(bench_case):
    graph, _, _ = bench_case
    paper = CCTraceNotebook.from_graph(graph)
    assert paper.text == flatten_execution_graph(graph)
    assert "<full_node_id>" not in paper.text and "U1:D2:2@1" not in paper.text
    assert all(op.op_id in paper.index.op_ids for op in graph.get_all_operations())  # ops stay findable
    ours = CCTraceNotebook.from_graph(graph, identities=True)
    assert ours.text == flatten_execution_graph(graph, include_variable_ids=True)
