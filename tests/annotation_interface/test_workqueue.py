"""The annotation queue: items of a folder, filters, next/skip/done and deep links."""

from __future__ import annotations

from urllib.parse import parse_qs, urlsplit

from annotation_interface.dataset import open_dataset
from annotation_interface.labels import Label
from annotation_interface.workqueue import (
    QueueFilter,
    QueueItem,
    deep_link,
    filter_items,
    find_item,
    next_item,
    queue_items,
)


def _item(graph, qa, split="mem0"):
    return QueueItem(graph_name=f"{split}/{graph}.json", qa_id=qa, query_full_name=f"query:{qa}", question="?",
                     split=split)


def test_the_queue_holds_every_wrong_question_with_its_text(faultbench, tmp_path):
    ds = open_dataset(faultbench, tmp_path / "idx")
    items = queue_items(ds)
    assert [(i.graph_name, i.qa_id) for i in items] == [(g, q) for g, q, _ in ds.wrong_qas()]
    assert all(i.question and i.split == i.graph_name.split("/")[0] for i in items)
    assert {i.split for i in items} == {"mem0", "rag", "long_context", "evermemos"}


def test_next_skips_done_and_skipped_cases_and_wraps():
    items = [_item("g", f"q{i}") for i in range(4)]
    refs = [i.ref for i in items]
    assert next_item(items, current=None, done=set(), skipped=set()) == items[0]
    assert next_item(items, current=refs[0], done={refs[1]}, skipped=set()) == items[2]
    assert next_item(items, current=refs[2], done={refs[1]}, skipped={refs[3]}) == items[0]  # wraps
    # only skipped cases are left: the queue comes back to them
    assert next_item(items, current=refs[0], done={refs[0], refs[1]}, skipped={refs[2], refs[3]}) == items[2]
    assert next_item(items, current=refs[0], done=set(refs), skipped=set()) is None
    assert next_item([], current=None, done=set(), skipped=set()) is None


def test_filters():
    items = [_item("a", "q1"), _item("a", "q2"), _item("b", "q3", split="rag")]
    labels = {
        items[0].ref: [Label(source="ef", error_type="UpdateError", op_id="op-1"),
                       Label(source="human:ana", error_type="UpdateError", op_id="op-1")],
        items[1].ref: [Label(source="ef", error_type="RetrievalError", op_id="op-2"),
                       Label(source="gs", error_type="UpdateError", op_id="op-1")],
    }

    def of(ref):
        return labels.get(ref, [])

    def run(**kw):
        return [i.qa_id for i in filter_items(items, QueueFilter(**kw), of, lambda g, op: f"name-{op}")]

    assert run() == ["q1", "q2", "q3"]
    assert run(split="rag") == ["q3"]
    assert run(predicted_type="UpdateError") == ["q1", "q2"]
    assert run(predicted_type="RetrievalError") == ["q2"]
    assert run(blamed_op="op-2") == ["q2"]
    assert run(blamed_op="name-op-1") == ["q1", "q2"]
    assert run(disagreement=True) == ["q2"]


def test_deep_links_round_trip():
    items = [_item("mem0-locomo-3-1", "locomo-qa-3-140"), _item("mem0-locomo-5-1", "locomo-qa-3-140")]
    url = deep_link("http://127.0.0.1:8501/", folder="/data/bench", item=items[1])
    query = parse_qs(urlsplit(url).query)
    assert query == {"folder": ["/data/bench"], "graph": ["mem0-locomo-5-1"], "case": ["locomo-qa-3-140"]}
    assert find_item(items, graph="mem0-locomo-5-1", case="locomo-qa-3-140") == items[1]
    assert find_item(items, graph="mem0-locomo-5-1", case="query:locomo-qa-3-140@1") == items[1]
    assert find_item(items, graph=None, case="query:locomo-qa-3-140") == items[0]
    assert find_item(items, graph="nope", case="locomo-qa-3-140") is None
    assert find_item(items, graph="mem0-locomo-3-1", case=None) is None
