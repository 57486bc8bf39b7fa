"""The data engine: scanning, classification, the cached index and its invalidation."""

from __future__ import annotations

import hashlib
import json
import os
import shutil

import pytest

from annotation_interface import loader
from annotation_interface.dataset import (
    DataPathError,
    default_index_dir,
    index_file_name,
    open_dataset,
)
from annotation_interface.parser import build_graph_index

from .conftest import faultbench_files, load_json


def test_memtracebench_folder_lists_every_graph_and_skips_the_manifest(faultbench, tmp_path):
    ds = open_dataset(faultbench, tmp_path / "idx")
    files = faultbench_files(faultbench)
    assert [g.graph_name for g in ds.graphs] == [p.relative_to(faultbench).as_posix() for p in files]
    assert "faultbench_manifest.json" in [p.graph_name for p in ds.skipped]
    assert ds.errors == []
    manifest = json.loads((faultbench / "faultbench_manifest.json").read_text())
    # every benchmark case is a wrong question of its file in the index
    wrong = {(g.split("/")[-1], q) for g, _, q in ds.wrong_qas()}
    assert {(c["file"], c["query_id"].split("@")[0]) for c in manifest["cases"]} <= wrong


def test_index_file_name_and_layout(faultbench, tmp_path):
    ds = open_dataset(faultbench, tmp_path / "idx")
    digest = hashlib.md5(str(faultbench.resolve()).encode()).hexdigest()[:12]
    assert index_file_name(faultbench) == f"dataset_index_{digest}.json"
    assert ds.index_path == tmp_path / "idx" / f"dataset_index_{digest}.json"
    saved = json.loads(ds.index_path.read_text())
    path = faultbench_files(faultbench)[0]
    entry = next(f for f in saved["files"] if f.get("graph_name") == path.relative_to(faultbench).as_posix())
    assert entry["graph_path"] == str(path.resolve())
    wrong = [q for q in build_graph_index(load_json(path)).qas if q.status == "wrong"]
    assert wrong and entry["wrong_qas"] == [{"qa_id": q.qa_id, "query_full_name": q.query_full_name,
                                                 "question": q.question} for q in wrong]
    assert entry["wrong_qas"][0]["query_full_name"] == "query:" + entry["wrong_qas"][0]["qa_id"]


def test_saved_index_is_reused_and_a_newer_file_is_indexed_again(faultbench, copy_tree, tmp_path, monkeypatch):
    data = copy_tree(faultbench, "bench")
    first = open_dataset(data, tmp_path / "idx")
    assert first.parsed_files == len(list(data.rglob("*.json")))  # every graph + the manifest

    opened: list[str] = []
    real = loader.read_graph_json
    monkeypatch.setattr("annotation_interface.dataset.read_graph_json",
                        lambda p: opened.append(os.path.basename(p)) or real(p))
    again = open_dataset(data, tmp_path / "idx")
    assert again.parsed_files == 0 and opened == [index_file_name(data)]  # only the index itself
    assert [g.graph_name for g in again.graphs] == [g.graph_name for g in first.graphs]

    target = faultbench_files(data)[-1]
    raw = json.loads(target.read_text())
    raw["data"]["nodes"] = [n for n in raw["data"]["nodes"] if n.get("class_name") != "judge_score"]
    target.write_text(json.dumps(raw))
    stamp = os.stat(target).st_mtime_ns + 5_000_000_000
    os.utime(target, ns=(stamp, stamp))
    opened.clear()
    third = open_dataset(data, tmp_path / "idx")
    assert third.parsed_files == 1 and opened[-1] == target.name
    entry = third.graph(target.relative_to(data).as_posix())
    assert entry.counts["unjudged"] == entry.counts["questions"] > 0 and entry.wrong_qas == []


def test_a_malformed_file_is_reported_and_the_others_load(faultbench, copy_tree, tmp_path):
    data = copy_tree(faultbench / "mem0", "mem0")
    (data / "broken.json").write_text('{"graph_id": "g", "data": {"nodes": [')
    ds = open_dataset(data, tmp_path / "idx")
    assert len(ds.graphs) == len(list((faultbench / "mem0").glob("*.json")))
    assert [p.graph_name for p in ds.errors] == ["broken.json"]
    assert "invalid JSON" in ds.errors[0].message


def test_an_empty_folder_has_no_graphs(tmp_path):
    (tmp_path / "empty").mkdir()
    ds = open_dataset(tmp_path / "empty", tmp_path / "idx")
    assert ds.graphs == [] and ds.errors == [] and ds.skipped == []


def test_missing_path_is_an_error(tmp_path):
    with pytest.raises(DataPathError, match="no such file or folder"):
        open_dataset(tmp_path / "nope", tmp_path / "idx")


def test_single_graph_file(sc_fixtures, tmp_path):
    ds = open_dataset(sc_fixtures / "sc012_memtracebench_like.json", tmp_path / "idx")
    assert [g.graph_name for g in ds.graphs] == ["sc012_memtracebench_like.json"]
    assert ds.graphs[0].counts["correct"] == 1 and ds.graphs[0].counts["wrong"] == 1


def test_top_level_graphs_stop_the_recursion(sc_fixtures, copy_tree, tmp_path):
    data = copy_tree(sc_fixtures / "sc012_toy_evaluation.json", "d/top.json")
    copy_tree(sc_fixtures / "sc012_toy_search.json", "d/sub/nested.json")
    ds = open_dataset(data.parent, tmp_path / "idx")
    assert [g.graph_name for g in ds.graphs] == ["top.json"]


def test_membase_output_folder_prefers_the_cumulative_graph(membase_run, tmp_path):
    ds = open_dataset(membase_run, tmp_path / "idx")
    assert [g.graph_name for g in ds.graphs] == ["traced_data/locomo-1/graph_evaluation.json"]
    skipped = {p.graph_name: p.message for p in ds.skipped}
    assert "superseded by graph_evaluation.json" in skipped["traced_data/locomo-1/graph_search.json"]
    assert "superseded" in skipped["traced_data/locomo-1/graph_construction.json"]
    assert any(name.startswith("memory/") for name in skipped)  # results files are not graphs
    g = ds.graphs[0]
    assert g.counts["questions"] == 2  # the adversarial question is skipped
    assert [q["qa_id"] for q in g.wrong_qas] == ["locomo-qa-1-1", "locomo-qa-1-2"]


def test_without_evaluation_the_search_stage_is_shown(membase_run, copy_tree, tmp_path):
    data = copy_tree(membase_run / "traced_data", "traced_data")
    (data / "locomo-1" / "graph_evaluation.json").unlink()
    ds = open_dataset(data, tmp_path / "idx")
    assert [g.graph_name for g in ds.graphs] == ["locomo-1/graph_search.json"]
    assert ds.graphs[0].counts["unjudged"] == 2


def test_unwritable_index_folder_keeps_the_index_in_memory(faultbench, tmp_path):
    blocker = tmp_path / "not_a_dir"
    blocker.write_text("x")
    ds = open_dataset(faultbench / "rag", blocker / "idx")
    assert len(ds.graphs) == len(list((faultbench / "rag").glob("*.json")))
    assert ds.index_note and "could not be saved" in ds.index_note


def test_a_corrupt_index_is_rebuilt(faultbench, tmp_path):
    ds = open_dataset(faultbench / "rag", tmp_path / "idx")
    ds.index_path.write_text("{not json")
    again = open_dataset(faultbench / "rag", tmp_path / "idx")
    n = len(list((faultbench / "rag").glob("*.json")))
    assert again.parsed_files == n and len(again.graphs) == n


def test_indexing_hands_the_first_graph_to_the_loader(faultbench, copy_tree, tmp_path, monkeypatch):
    """Opening the graph shown first right after indexing does not parse its file again."""
    data = copy_tree(faultbench / "rag", "rag")
    ds = open_dataset(data, tmp_path / "idx")
    calls: list[str] = []
    real = loader.read_graph_json
    monkeypatch.setattr(loader, "read_graph_json", lambda p: calls.append(str(p)) or real(p))
    pg = loader.load_graph(ds.graphs[0].graph_path)
    assert calls == [] and len(pg.index.qas) == ds.graphs[0].counts["questions"]
    loader.load_graph(ds.graphs[0].graph_path)
    assert len(calls) == 1  # the hand-off is used once


def test_default_index_dir_honours_the_environment(tmp_path):
    assert default_index_dir({"MEMTRACE_CACHE_DIR": str(tmp_path)}) == tmp_path / "annotation_interface"
    assert default_index_dir({"XDG_CACHE_HOME": str(tmp_path)}) == tmp_path / "memtrace" / "annotation_interface"


def test_hidden_folders_and_index_files_are_not_scanned(faultbench, copy_tree, tmp_path):
    data = copy_tree(faultbench / "rag", "rag")
    names = sorted(p.name for p in data.glob("*.json"))
    shutil.copy2(data / names[0], data / "dataset_index_0123456789ab.json")
    (data / ".cache").mkdir()
    shutil.copy2(data / names[0], data / ".cache" / "copy.json")
    ds = open_dataset(data, tmp_path / "idx")
    assert [g.graph_name for g in ds.graphs] == names
