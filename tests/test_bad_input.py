"""Bad input to the commands a user runs: exit 2, one ``error:`` line naming the flag, file or record, no traceback.

Each case runs the command's ``main(argv)`` in-process. The cases are the holes an audit of every entry point
found (numbers out of range that were accepted, a file where a folder goes, records of the wrong shape, output
paths that raised a traceback after the work was done); what other test modules already cover is not repeated.
"""

from __future__ import annotations

import argparse
import importlib
import json
from collections.abc import Callable, Sequence
from pathlib import Path

import pytest

from annotation_interface import cli as annotation_cli
from annotation_interface import export as annotation_export
from benchmarks.attribution.__main__ import main as benchmark_main
from membase import cli as membase_cli
from membase.datasets import gold_points
from toolkits import retrieval_cli
from toolkits.attribution import cli as attribution_cli
from toolkits.faultbench.__main__ import main as faultbench_main
from toolkits.optimization import command as optimization_command
from toolkits.report import cli as report_cli

REPO = Path(__file__).resolve().parents[1]
FAULTBENCH = REPO / "examples" / "faultbench"
A_GRAPH = "evermemos/evermemos-locomo-5-1.json"  # a committed example graph with wrongly answered questions


PARSERS = {
    "run_error_attribution.py": "toolkits.attribution.cli:build_parser",
    "generate_report.py": "toolkits.report.cli:build_parser",
    "run_optimization.py": "toolkits.optimization.command:build_parser",
    "eval_retrieval_performance.py": "toolkits.retrieval_cli:build_parser",
    "python -m membase": "membase.cli:build_parser",
    "python -m toolkits.faultbench": "toolkits.faultbench.__main__:_parser",
    "python -m benchmarks.attribution": "benchmarks.attribution.__main__:_parser",
    "python -m annotation_interface.export": "annotation_interface.export:build_parser",
    "python -m annotation_interface": "annotation_interface.cli:build_parser",
}


def _exit_code(main: Callable[[Sequence[str]], int], argv: Sequence[str]) -> int:
    try:
        return main(argv)
    except SystemExit as exc:  # argparse's usage errors
        return int(exc.code)


def _fails(capsys, main: Callable[[Sequence[str]], int], argv: Sequence[str], fragment: str) -> str:
    """Run ``main``; it must exit 2 with exactly one error line holding ``fragment``; returns that line."""
    code = _exit_code(main, [str(a) for a in argv])
    err = capsys.readouterr().err
    assert "Traceback" not in err, err
    lines = [line for line in err.splitlines() if line.startswith("error:") or ": error:" in line]
    assert code == 2, err
    assert len(lines) == 1 and fragment in lines[0], err
    return lines[0]


@pytest.fixture()
def rag_config(tmp_path: Path) -> Path:
    path = tmp_path / "rag.json"
    path.write_text(json.dumps({"layer_type": "NaiveRAG", "max_tokens": 1200, "deferred": True}), encoding="utf-8")
    return path


# -- python -m membase --------------------------------------------------------------------------------


def _membase_run(config: Path, dataset: Path | str, out: Path, *extra: str) -> list[str]:
    return ["run", "--layer-config", str(config), "--dataset", str(dataset), "--output-dir", str(out),
            "--start-idx", "0", "--end-idx", "1", "--qa-model", "fake:x", "--judge-model", "fake:x",
            "--metrics", "f1", "--quiet", *extra]


@pytest.mark.parametrize(
    ("flags", "fragment"),
    [
        (["--top-k", "0"], "argument --top-k: expected an integer >= 1, got 0"),
        (["--top-k", "-1"], "argument --top-k: expected an integer >= 1, got -1"),
        (["--num-workers", "0"], "argument --num-workers: expected an integer >= 1"),
        (["--timeout", "-1"], "argument --timeout: expected a number > 0"),
        (["--timeout", "0"], "argument --timeout: expected a number > 0"),
        (["--max-retries", "-1"], "argument --max-retries: expected an integer >= 0"),
        (["--qa-batch-size", "0"], "argument --qa-batch-size: expected an integer >= 1"),
        (["--judge-batch-size", "-3"], "argument --judge-batch-size: expected an integer >= 1"),
    ],
    ids=["top-k-0", "top-k-negative", "num-workers-0", "timeout-negative", "timeout-0", "max-retries-negative",
         "qa-batch-size-0", "judge-batch-size-negative"],
)
def test_membase_numbers_out_of_range_are_usage_errors(tmp_path, capsys, rag_config, flags, fragment):
    out = tmp_path / "run"
    _fails(capsys, membase_cli.main, _membase_run(rag_config, tmp_path / "unread.json", out, *flags), fragment)
    assert not out.exists()


@pytest.mark.parametrize(
    ("config", "fragment"),
    [
        ({"layer_type": "NaiveRAG", "max_tokens": -5}, "invalid NaiveRAG config: max_tokens"),
        ({"layer_type": "NoSuchLayer"}, "unknown layer_type 'NoSuchLayer'"),
    ],
    ids=["bad-field", "unknown-layer"],
)
def test_membase_layer_config_errors_name_the_file(tmp_path, capsys, locomo_path, config, fragment):
    path = tmp_path / "layer.json"
    path.write_text(json.dumps(config), encoding="utf-8")
    line = _fails(capsys, membase_cli.main, _membase_run(path, locomo_path, tmp_path / "run"), fragment)
    assert f"layer config {str(path)!r}" in line


def test_membase_no_call_cache_with_a_cache_dir(tmp_path, capsys, rag_config):
    out = tmp_path / "run"
    _fails(capsys, membase_cli.main,
           _membase_run(rag_config, tmp_path / "unread.json", out, "--no-call-cache", "--cache-dir", str(tmp_path)),
           "--no-call-cache and --cache-dir contradict each other")
    assert not out.exists()


def test_membase_cache_dir_that_is_a_file_stops_before_any_stage(tmp_path, capsys, rag_config, a_file, locomo_path):
    out = tmp_path / "run"
    line = _fails(capsys, membase_cli.main, _membase_run(rag_config, locomo_path, out, "--cache-dir", str(a_file)),
                  "--cache-dir")
    assert str(a_file) in line and "is a file" in line
    assert not (out / "memory").exists() and not (out / "traced_data").exists()


def test_membase_default_call_cache_blocked_by_a_file_names_the_output_dir(tmp_path, capsys, rag_config,
                                                                          locomo_path):
    out = tmp_path / "run"
    out.mkdir()
    (out / "call_cache").write_text("x", encoding="utf-8")
    line = _fails(capsys, membase_cli.main, _membase_run(rag_config, locomo_path, out), "--output-dir")
    assert str(out / "call_cache") in line


def test_membase_unknown_question_type_to_skip_lists_the_known_ones(tmp_path, capsys, rag_config, locomo_path):
    out = tmp_path / "run"
    argv = ["search", "--layer-config", str(rag_config), "--dataset", str(locomo_path), "--output-dir", str(out),
            "--start-idx", "0", "--end-idx", "1", "--quiet", "--skip-question-types", "adversarial", "adverserial"]
    line = _fails(capsys, membase_cli.main, argv, "--skip-question-types 'adverserial': no question of")
    assert "adversarial, " in line and "'adversarial'" not in line
    assert not (out / "memory").exists()


@pytest.mark.parametrize(
    ("content", "fragment"),
    [
        (b"[1, 2]", "record 0 is not a search result (an object with a user_id), got 1"),
        (b'[{"qa_pair": {}}]', "record 0 is not a search result (an object with a user_id)"),
        ("caf\xe9".encode("latin-1"), "are not UTF-8 text"),
    ],
    ids=["numbers", "no-user-id", "latin-1"],
)
def test_membase_evaluate_on_search_results_of_the_wrong_shape(tmp_path, capsys, rag_config, content, fragment):
    results = tmp_path / "results.json"
    results.write_bytes(content)
    argv = ["evaluate", "--layer-config", str(rag_config), "--output-dir", str(tmp_path / "run"),
            "--search-results", str(results), "--qa-model", "fake:x", "--judge-model", "fake:x", "--metrics", "f1",
            "--quiet", "--dataset-type", "LoCoMo"]
    line = _fails(capsys, membase_cli.main, argv, fragment)
    assert str(results) in line
    assert not (tmp_path / "results_evaluation.json").exists()


# -- run_error_attribution.py, eval_retrieval_performance.py, generate_report.py ---------------------


def _attribute(out: Path, *flags: object) -> list:
    return [FAULTBENCH, "rag", "--output-path", out, "--exploration-strategy", "evidence_flow", "--no-progress",
            "--bootstrap-samples", "0", *flags]


@pytest.mark.parametrize(
    ("flags", "fragment"),
    [
        (["--api-config-path", "{tmp}/missing.json"], "--api-config-path '{tmp}/missing.json': no such file"),
        (["--api-config-path", "{tmp}"], "--api-config-path '{tmp}': is a folder, not a JSON file"),
        (["--embedding-cache-dir", "{file}"], "argument --embedding-cache-dir: '{file}' is a file, not a folder"),
    ],
    ids=["api-config-missing", "api-config-a-folder", "embedding-cache-a-file"],
)
def test_attribution_named_files_that_cannot_serve(tmp_path, capsys, a_file, flags, fragment):
    """evidence_flow needs neither credentials nor embeddings, so these ran before without a word."""
    out = tmp_path / "attr.json"
    def fill(text: str) -> str:
        return text.format(tmp=tmp_path, file=a_file)

    _fails(capsys, attribution_cli.main, _attribute(out, *map(fill, flags)), fill(fragment))
    assert not out.exists()


@pytest.mark.parametrize(
    ("flags", "fragment"),
    [
        (["--exploration-strategy", "evidence_flow", "--evidence-flow-seed"],
         "--evidence-flow-seed has no effect with --exploration-strategy evidence_flow: it seeds the graph_search agent"),
        (["--exploration-strategy", "long_context", "--obs-identities"],
         "--obs-identities has no effect with --exploration-strategy long_context: it is for operation_block_search's "
         "flat log"),
    ],
    ids=["seed-without-graph-search", "identities-without-flat-log"],
)
def test_attribution_flag_of_another_strategy(tmp_path, capsys, flags, fragment):
    out = tmp_path / "attr.json"
    _fails(capsys, attribution_cli.main, [*_attribute(out), *flags], fragment)
    assert not out.exists()


def test_retrieval_embedding_cache_that_is_a_file(capsys, a_file):
    _fails(capsys, retrieval_cli.main, [FAULTBENCH, "rag", "--retrieval-type", "dense", "--embedding-provider",
                                        "hashing", "--embedding-cache-dir", a_file],
           f"argument --embedding-cache-dir: {str(a_file)!r} is a file, not a folder")


def test_report_otel_endpoint_that_is_no_url(tmp_path, capsys):
    results = tmp_path / "attr.json"
    results.write_text(json.dumps({"results": []}), encoding="utf-8")
    _fails(capsys, report_cli.main, ["--data-path", results, "--save-folder", tmp_path / "report", "--no-llm",
                                     "--otel-endpoint", "localhost:4318"],
           "--otel-endpoint must be an http:// or https:// URL")
    assert not (tmp_path / "report").exists()


# -- run_error_attribution.py --verify replay --------------------------------------------------------


def test_replay_of_records_from_another_run_is_one_error_line(tmp_path, capsys, locomo_path):
    """A run folder (its manifest) and a --from output whose records name a trajectory the run never had."""
    run = tmp_path / "run"
    run.mkdir()
    manifest = {"format": "membase-run-v1", "layer_type": "NaiveRAG", "memory_config": {"deferred": True},
                "dataset": str(locomo_path), "dataset_type": "LoCoMo", "start_idx": 0, "end_idx": 1,
                "top_k": 10, "qa_model": "fake:x", "judge_model": "fake:x", "metrics": ["f1"],
                "results_file": "memory/10_0_1_evaluation.json"}
    (run / "replay_manifest.json").write_text(json.dumps(manifest), encoding="utf-8")
    other = tmp_path / "other.json"
    other.write_text(json.dumps({"results": [{
        "query_id": "q-1", "graph_path": "bench/rag/elsewhere.json",
        "error_attribution_result": {"error_type": "RetrievalError", "op_id": "op-1", "reason": "r"}}]}),
        encoding="utf-8")
    out = tmp_path / "verified.json"
    line = _fails(capsys, attribution_cli.main,
                  [run, "--output-path", out, "--exploration-strategy", "evidence_flow", "--no-progress",
                   "--verify", "replay", "--from", other, "--replay-offline"],
                  "--verify replay: trajectory 'rag' is not in the run's dataset slice")
    assert f"--from {str(other)!r}" in line and not out.exists()


# -- run_optimization.py ------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("flags", "fragment"),
    [
        (["--model-timeout", "-5"], "argument --model-timeout: expected a number > 0"),
        (["--cache-dir", "{file}"], "argument --cache-dir: {file!r} is a file, not a folder"),
        (["--seeds", ""], "--seeds '': give a comma list"),
    ],
    ids=["model-timeout", "cache-dir-a-file", "seeds-empty"],
)
def test_optimization_flags(tmp_path, capsys, a_file, locomo_path, flags, fragment):
    out = tmp_path / "opt"
    argv = ["--config-path", REPO / "examples" / "configs" / "mem0_offline.json", "--dataset-path", locomo_path,
            "--optimization-dir", out, "--qa-model", "fake:x", "--judge-model", "fake:x", "--optimizer-model",
            "fake:x", "--attribution-strategy", "evidence_flow", "--sample-size", "1", "--no-progress",
            *(flag.format(file=str(a_file)) for flag in flags)]
    _fails(capsys, optimization_command.main, argv, fragment.format(file=str(a_file)))
    assert not out.exists()


@pytest.mark.parametrize(
    ("flags", "fragment"),
    [
        (["--search-cache-dir", "{file}"], "argument --search-cache-dir: {file!r} is a file, not a folder"),
        (["--targets", "top_k"], "--targets: only for --objective judge"),
        (["--optimizer", "gepa", "--validation-gate"], "--optimizer gepa, --validation-gate: only for --objective judge"),
    ],
    ids=["search-cache-a-file", "targets", "gepa-and-gate"],
)
def test_parameter_loop_flags(tmp_path, capsys, a_file, rag_config, locomo_path, flags, fragment):
    """Before: a NotADirectoryError traceback after the first build, or prompt-loop flags silently ignored."""
    out = tmp_path / "opt"
    argv = ["--config-path", rag_config, "--dataset-path", locomo_path, "--optimization-dir", out,
            "--objective", "context_recall", "--no-progress", *(f.format(file=str(a_file)) for f in flags)]
    _fails(capsys, optimization_command.main, argv, fragment.format(file=str(a_file)))
    assert not out.exists()


# -- python -m membase.datasets.gold_points -----------------------------------------------------------


@pytest.mark.parametrize(
    ("where", "fragment"),
    [
        (lambda tmp, f: f / "checks.json", "cannot be created: {file!r} is a file, not a folder"),
        (lambda tmp, f: tmp, "is a folder; give a file path"),
    ],
    ids=["under-a-file", "a-folder"],
)
def test_gold_points_output_that_cannot_be_written(tmp_path, capsys, a_file, where, fragment):
    output = where(tmp_path, a_file)
    line = _fails(capsys, gold_points.main, [tmp_path / "no_run", "--output", output], fragment.format(file=str(a_file)))
    assert "argument --output" in line


def test_gold_points_write_failure_is_one_line(tmp_path, capsys, monkeypatch):
    """The checks are printed; a write that fails afterwards (disk full) is an error line, not a traceback."""
    import membase.utils.io as io

    monkeypatch.setattr(gold_points, "check_run", lambda run, threshold: {"u": []})

    def full_disk(path, data, **kwargs):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(io, "atomic_write_json", full_disk)
    line = _fails(capsys, gold_points.main, [tmp_path, "--output", tmp_path / "checks.json"], "cannot write --output")
    assert "No space left on device" in line


# -- python -m toolkits.faultbench score -----------------------------------------------------------------


def test_faultbench_score_of_graphs_without_annotations(tmp_path, capsys):
    """Before: a table of zero cases and exit 0."""
    graph = json.loads((FAULTBENCH / "rag" / "rag-locomo-1-4.json").read_text(encoding="utf-8"))
    graph["data"].pop("annotations")
    (tmp_path / "rag").mkdir()
    (tmp_path / "rag" / "g.json").write_text(json.dumps(graph), encoding="utf-8")
    _fails(capsys, faultbench_main, ["score", tmp_path], "no case to score under")


# -- python -m benchmarks.attribution ------------------------------------------------------------------


@pytest.mark.parametrize(
    ("argv", "fragment"),
    [
        (["build", "d", "{file}"], "argument out: {file!r} is a file, not a folder"),
        (["build", "d", "{tmp}/out", "--cases", "99999"], "--cases 99999: benchmark d has cases 1.."),
        (["build", "d", "{tmp}/out", "--top-k", "0"], "argument --top-k: expected an integer >= 1"),
        (["score", "{tmp}", "--attribute", "{file}"], "argument --attribute: {file!r} is a file, not a folder"),
    ],
    ids=["build-into-a-file", "unknown-case", "top-k-0", "attribute-into-a-file"],
)
def test_attribution_benchmark_cli(tmp_path, capsys, a_file, argv, fragment):
    """Before: a FileExistsError traceback, or an empty build that exited 0."""
    _fails(capsys, benchmark_main, [a.format(tmp=tmp_path, file=str(a_file)) for a in argv],
           fragment.format(file=str(a_file)))
    assert not (tmp_path / "out").exists()


# -- python -m annotation_interface.export and the launcher -------------------------------------------


def _record(graph: str = A_GRAPH, qa_id: str = "locomo-qa-5-171") -> dict:
    return {"graph_name": graph, "qa_id": qa_id, "annotator": "ana",
            "manual_error_attribution": {"error_type": "RetrievalError", "op_id": "op-1", "reason": "seen"}}


def _export(tmp_path: Path, records: object, out: Path, data: Path = FAULTBENCH) -> list:
    annotations = tmp_path / "annotations.json"
    annotations.write_text(json.dumps(records), encoding="utf-8")
    return ["--data", data, "--annotations", annotations, "--out", out, "--index-dir", tmp_path / "index"]


def test_export_into_a_file_is_refused(tmp_path, capsys, a_file):
    _fails(capsys, annotation_export.main, _export(tmp_path, [_record()], a_file),
           f"argument --out: {str(a_file)!r} is a file, not a folder")


@pytest.mark.parametrize("records", [[1, 2], [{"graph": A_GRAPH, "label": "x"}]], ids=["numbers", "other-objects"])
def test_export_of_records_that_are_no_annotations(tmp_path, capsys, records):
    out = tmp_path / "bench"
    _fails(capsys, annotation_export.main, _export(tmp_path, records, out),
           "record(s) is a manual attribution of the annotation interface")
    assert not out.exists()


def test_export_that_leaves_every_case_out_is_an_error(tmp_path, capsys):
    out = tmp_path / "bench"
    _fails(capsys, annotation_export.main, _export(tmp_path, [_record(graph="mem0/not-in-this-folder.json")], out),
           "no case exported: each of the 1 labelled case(s) was left out")
    assert not out.exists() or not any(out.rglob("*.json"))


def test_export_of_a_good_record_still_works(tmp_path, capsys):
    out = tmp_path / "bench"
    assert annotation_export.main([str(a) for a in _export(tmp_path, [_record()], out)]) == 0
    assert (out / A_GRAPH).is_file()


def test_launcher_refuses_a_folder_without_graphs(tmp_path, capsys, monkeypatch):
    started: list = []
    monkeypatch.setattr(annotation_cli.subprocess, "call", lambda cmd: started.append(cmd) or 0)
    (tmp_path / "empty").mkdir()
    line = _fails(capsys, annotation_cli.main, ["--data", tmp_path / "empty", "--output-path", tmp_path / "a.json"],
                  "the folder holds no graph JSON file")
    assert str(tmp_path / "empty") in line and started == []


# -- --help explains every flag ---------------------------------------------------------------------------


def _flags_without_help(parser: argparse.ArgumentParser, prefix: str = "") -> list[str]:
    missing = []
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for name, sub in action.choices.items():
                missing += _flags_without_help(sub, f"{prefix}{name} ")
        elif not (action.help or "").strip() and action.dest != "help":
            missing.append(prefix + (action.option_strings[-1] if action.option_strings else action.dest))
    return missing


@pytest.mark.parametrize("command", sorted(PARSERS))
def test_help_explains_every_flag(command):
    module, factory = PARSERS[command].split(":")
    parser = getattr(importlib.import_module(module), factory)()
    assert _flags_without_help(parser) == []


def test_the_help_check_sees_a_flag_without_help():
    parser = argparse.ArgumentParser()
    parser.add_argument("--explained", help="what it does")
    parser.add_argument("--bare")
    assert _flags_without_help(parser) == ["--bare"]
