"""Bad input for the smaller CLIs: faultbench, eval_retrieval_performance.py, the annotation launcher, membase run,
and what the attribution CLI's own tests do not try (a file as the benchmark folder, an unreadable or dangling graph).

Each case: exit 2, one ``error`` line naming the file or flag, no traceback, and nothing started.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from annotation_interface import cli as annotation_cli
from membase import cli as membase_cli
from tests.resume._unreadable import make_unreadable
from toolkits import retrieval_cli
from toolkits.attribution import cli as attribution_cli
from toolkits.faultbench.__main__ import main as faultbench_main

REPO = Path(__file__).resolve().parents[1]
FAULTBENCH = REPO / "examples" / "faultbench"


@pytest.fixture()
def locomo_file(locomo_path) -> Path:
    return locomo_path


def _one_error(capsys, code: int, fragment: str) -> str:
    err = capsys.readouterr().err
    assert "Traceback" not in err
    lines = [line for line in err.splitlines() if "error" in line]
    assert code == 2, err
    assert len(lines) == 1 and fragment in lines[0], err
    return lines[0]


# -- python -m toolkits.faultbench ------------------------------------------------------------------


def test_faultbench_score_names_a_broken_graph_file(tmp_path, capsys):
    (tmp_path / "rag").mkdir()
    (tmp_path / "rag" / "broken.json").write_text("{not json", encoding="utf-8")
    line = _one_error(capsys, faultbench_main(["score", str(tmp_path), "--splits", "rag"]), "not a graph file")
    assert str(tmp_path / "rag" / "broken.json") in line


def test_faultbench_build_into_a_file(tmp_path, capsys, a_file, locomo_file):
    _one_error(capsys, faultbench_main(["build", str(a_file), "--locomo", str(locomo_file), "--splits", "rag"]),
               f"output folder {str(a_file)!r} is a file")


@pytest.mark.parametrize(
    ("flags", "fragment"),
    [
        (["--top-k", "0"], "--top-k must be at least 1"),
        (["--conversations", "0"], "--conversations takes 1-based LoCoMo sample numbers, got 0"),
        (["--conversations", "1", "99"], "conversations [99] are outside 1..10"),
    ],
    ids=["top-k-0", "conversation-0", "conversation-99"],
)
def test_faultbench_build_numbers_out_of_range(tmp_path, capsys, locomo_file, flags, fragment):
    out = tmp_path / "bench"
    code = faultbench_main(["build", str(out), "--locomo", str(locomo_file), "--splits", "rag", "--kinds", "response",
                            *flags])
    _one_error(capsys, code, fragment)
    assert not (out / "rag").exists()


@pytest.mark.parametrize(
    ("content", "fragment"),
    [
        ("caf\xe9".encode("latin-1"), "is not UTF-8 text (byte 3"),
        (b'[{"conversation": "x", "qa": []}]', "LoCoMo sample 1 in {path!r} does not have the locomo10.json layout"),
        (b"[3]", "{path!r} is not a LoCoMo, LongMemEval or RealMem file by its shape (a list of int)"),
    ],
    ids=["latin-1", "conversation-string", "sample-int"],
)
def test_faultbench_build_on_a_bad_locomo_file(tmp_path, capsys, content, fragment):
    locomo = tmp_path / "locomo.json"
    locomo.write_bytes(content)
    code = faultbench_main(["build", str(tmp_path / "bench"), "--locomo", str(locomo), "--splits", "rag"])
    line = _one_error(capsys, code, fragment.format(path=str(locomo)))
    assert str(locomo) in line


# -- eval_retrieval_performance.py ------------------------------------------------------------------


@pytest.mark.parametrize(
    ("where", "fragment"),
    [
        (lambda tmp, f: f / "out.json", "cannot be created: {file!r} is a file, not a folder"),
        (lambda tmp, f: tmp, "is a folder; give a .json file path"),
    ],
    ids=["under-a-file", "a-folder"],
)
def test_eval_retrieval_refuses_an_unwritable_output_before_scoring(tmp_path, capsys, a_file, monkeypatch, where,
                                                                     fragment):
    import toolkits.retrieval_eval as retrieval_eval

    monkeypatch.setattr(retrieval_eval, "evaluate_retrieval",
                        lambda *a, **k: pytest.fail("scored before the output path was checked"))
    output = where(tmp_path, a_file)
    code = retrieval_cli.main([str(FAULTBENCH), "rag", "--retrieval-type", "sparse", "--output-path", str(output)])
    line = _one_error(capsys, code, fragment.format(file=str(a_file)))
    assert f"--output-path {str(output)!r}" in line


def test_eval_retrieval_dataset_dir_that_is_a_file(capsys, a_file):
    _one_error(capsys, retrieval_cli.main([str(a_file), "rag", "--retrieval-type", "sparse"]),
               f"dataset_dir {str(a_file)!r} is a file")


def test_eval_retrieval_write_failure_keeps_the_printed_lines(tmp_path, capsys, monkeypatch):
    import toolkits._case_cache as case_cache

    def full_disk(path, data, **kwargs):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(case_cache, "atomic_write_json", full_disk)
    code = retrieval_cli.main([str(FAULTBENCH), "rag", "--retrieval-type", "sparse",
                               "--output-path", str(tmp_path / "recall.json")])
    out = capsys.readouterr()
    assert code == 2 and "Traceback" not in out.err
    assert "recall@8 (overall)" in out.out
    assert out.err.strip().startswith("error: cannot write --output-path") and "No space left" in out.err


# -- python -m annotation_interface (the launcher) -----------------------------------------------------


@pytest.fixture()
def no_streamlit(monkeypatch):
    started: list[list[str]] = []
    monkeypatch.setattr(annotation_cli.subprocess, "call", lambda cmd: started.append(cmd) or 0)
    return started


@pytest.mark.parametrize(
    ("make", "fragment"),
    [
        (lambda tmp, f: f / "annotations.json", "cannot be created: {file!r} is a file, not a folder"),
        (lambda tmp, f: tmp, "is a folder: give a file name"),
        (lambda tmp, f: (tmp / "o.json").write_text('{"a": 1}') and tmp / "o.json", "not an array of annotation"),
        (lambda tmp, f: (tmp / "o.json").write_bytes(b"\xff\xfe[") and tmp / "o.json", "cannot be read"),
    ],
    ids=["under-a-file", "a-folder", "an-object", "not-utf8"],
)
def test_launcher_checks_the_output_path_before_streamlit(tmp_path, capsys, a_file, no_streamlit, make, fragment):
    output = make(tmp_path, a_file)
    line = _one_error(capsys, annotation_cli.main(["--data", str(FAULTBENCH), "--output-path", str(output)]),
                      fragment.format(file=str(a_file)))
    assert line.startswith("python -m annotation_interface: error: --output-path")
    assert no_streamlit == []


@pytest.mark.parametrize(
    ("flags", "fragment"),
    [
        (["--port", "99999"], "argument --port: expected a port number in 1..65535, got 99999"),
        (["--api-config", "missing_api_config.json"], "--api-config missing_api_config.json: no such file"),
    ],
    ids=["port", "api-config"],
)
def test_launcher_flags(tmp_path, capsys, no_streamlit, monkeypatch, flags, fragment):
    monkeypatch.chdir(tmp_path)
    code = None
    try:
        code = annotation_cli.main(["--data", str(FAULTBENCH), *flags])
    except SystemExit as exc:  # argparse's own exit for a bad --port
        code = exc.code
    _one_error(capsys, code, fragment)
    assert no_streamlit == []


def test_launcher_starts_streamlit_when_everything_is_fine(tmp_path, no_streamlit):
    assert annotation_cli.main(["--data", str(FAULTBENCH), "--output-path", str(tmp_path / "a.json")]) == 0
    assert len(no_streamlit) == 1 and "--output-path" in no_streamlit[0]


# -- python -m membase run ----------------------------------------------------------------------------


def _membase_run(config: Path, dataset: Path, out: Path) -> int:
    return membase_cli.main(["run", "--layer-config", str(config), "--dataset", str(dataset), "--output-dir", str(out),
                             "--start-idx", "0", "--end-idx", "1", "--qa-model", "fake:x", "--judge-model", "fake:x",
                             "--metrics", "f1", "--quiet"])


@pytest.fixture()
def rag_config(tmp_path: Path) -> Path:
    path = tmp_path / "rag.json"
    path.write_text(json.dumps({"layer_type": "NaiveRAG", "max_tokens": 1200, "deferred": True}), encoding="utf-8")
    return path


@pytest.mark.parametrize(
    ("content", "fragment"),
    [(b"", "is not valid JSON"), (b"[]", "must be a JSON object with a layer_type key")],
    ids=["empty", "a-list"],
)
def test_membase_config_edge_cases(tmp_path, capsys, locomo_file, content, fragment):
    config = tmp_path / "config.json"
    config.write_bytes(content)
    line = _one_error(capsys, _membase_run(config, locomo_file, tmp_path / "out"), fragment)
    assert str(config) in line


@pytest.mark.parametrize(
    ("make", "fragment"),
    [
        (lambda d: d.mkdir(), "is a folder; pass the path to locomo10.json"),
        (lambda d: d.write_bytes("caf\xe9".encode("latin-1")), "is not UTF-8 text"),
        (lambda d: d.write_text('[{"conversation": {}, "qa": 5}]'), "lacks key"),
        (lambda d: d.write_text('[{"conversation": "c"}]'), "does not have the locomo10.json layout"),
    ],
    ids=["folder", "latin-1", "no-speakers", "conversation-string"],
)
def test_membase_bad_dataset(tmp_path, capsys, rag_config, make, fragment):
    dataset = tmp_path / "locomo.json"
    make(dataset)
    line = _one_error(capsys, _membase_run(rag_config, dataset, tmp_path / "out"), fragment)
    assert str(dataset) in line


def test_membase_output_dir_that_is_a_file(capsys, rag_config, a_file, locomo_file):
    _one_error(capsys, _membase_run(rag_config, locomo_file, a_file),
               f"--output-dir: {str(a_file)!r} is a file, where the run keeps a folder")


# -- run_error_attribution.py -----------------------------------------------------------------------


@pytest.fixture()
def one_graph_split(tmp_path: Path) -> Path:
    """A MemTraceBench folder whose ``rag`` split holds one committed faultbench graph."""
    split = tmp_path / "bench" / "rag"
    split.mkdir(parents=True)
    (split / "g.json").write_bytes((FAULTBENCH / "rag" / "rag-locomo-1-4.json").read_bytes())
    return tmp_path / "bench"


def _attribute(dataset: Path, out: Path, *extra: str) -> int:
    return attribution_cli.main([str(dataset), "rag", "--output-path", str(out), "--exploration-strategy",
                                       "evidence_flow", "--no-progress", "--bootstrap-samples", "0", *extra])


def test_attribution_dataset_dir_that_is_a_file_is_refused_without_a_download(tmp_path, capsys, a_file):
    line = _one_error(capsys, _attribute(a_file, tmp_path / "o.json"), f"dataset_dir {str(a_file)!r} is a file")
    assert "download" not in line


def test_attribution_unreadable_graph_file(tmp_path, capsys, one_graph_split, monkeypatch):
    graph = one_graph_split / "rag" / "g.json"
    make_unreadable(graph, monkeypatch)
    line = _one_error(capsys, _attribute(one_graph_split, tmp_path / "o.json"), "Permission denied")
    assert str(graph) in line
    assert not (tmp_path / "o.json").exists()


def test_attribution_graph_with_an_edge_to_a_missing_node(tmp_path, capsys, one_graph_split):
    graph = one_graph_split / "rag" / "g.json"
    data = json.loads(graph.read_text(encoding="utf-8"))
    edge = data["data"]["edges"][3]
    edge["target_full_node_id"] = "fact:str:never-recorded@1"
    graph.write_text(json.dumps(data), encoding="utf-8")
    line = _one_error(capsys, _attribute(one_graph_split, tmp_path / "o.json"), "refers to missing node")
    assert str(graph) in line and edge["edge_id"] in line and "fact:str:never-recorded@1" in line


def test_attribution_sample_size_beyond_the_graphs(tmp_path, capsys, one_graph_split):
    _one_error(capsys, _attribute(one_graph_split, tmp_path / "o.json", "--sample-size", str(10**12)),
               "--sample-size must be between 1 and the number of graphs (1)")


@pytest.mark.parametrize("name", ["g.json", "new.json"], ids=["an-input-graph", "beside-the-graphs"])
def test_attribution_output_among_the_input_graphs_is_refused(tmp_path, capsys, one_graph_split, name):
    graph = one_graph_split / "rag" / "g.json"
    before = graph.read_bytes()
    out = one_graph_split / "rag" / name
    _one_error(capsys, _attribute(one_graph_split, out), "is inside the input graphs' folder")
    assert graph.read_bytes() == before and not (one_graph_split / "rag" / "new.json").exists()


def test_a_missing_split_is_one_error_line_without_the_hubs_own_warning(tmp_path, capsys, caplog):
    """The split folder exists but holds no graph: the hub is asked (and, offline, fails); its own
    connection warning is not printed next to our one-line error."""
    import logging

    pytest.importorskip("huggingface_hub")
    from toolkits.attribution import cli as attribution_cli

    (tmp_path / "mem0").mkdir()
    with caplog.at_level(logging.WARNING):
        code = attribution_cli.main([str(tmp_path), "mem0", "--exploration-strategy", "evidence_flow",
                                           "--output-path", str(tmp_path / "out.json"), "--no-progress"])
    assert code == 2
    assert [line for line in capsys.readouterr().err.splitlines() if line.strip()][0].startswith("error:")
    assert not [r for r in caplog.records if r.name.startswith("huggingface_hub")]
