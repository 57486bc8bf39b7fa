"""The graph format contract: fixtures written by the real smartcomment 0.1.2 round-trip exactly,
and the reference's own fixture program runs unchanged against our package."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from smartcomment.runtime.network import ExecNetwork
from tests.smartcomment._normalize import normalize

REPO = Path(__file__).resolve().parents[2]
GOLDEN = Path(__file__).parent / "golden"
FIXTURE_NAMES = [
    "sc012_toy_construction.json",
    "sc012_toy_search.json",
    "sc012_toy_evaluation.json",
    "sc012_edge_cases.json",
    "sc012_memtracebench_like.json",
]


@pytest.mark.parametrize("name", FIXTURE_NAMES)
def test_import_export_reproduces_fixture(fixtures_dir: Path, name: str) -> None:
    original = json.loads((fixtures_dir / name).read_text(encoding="utf-8"))
    exported = ExecNetwork.import_graph(original).export_graph()
    expected = json.loads(json.dumps(original))
    expected["data"].pop("annotations", None)
    # Compare serialized text: key order and value types must match too, not only equality.
    assert json.dumps(exported, indent=4, ensure_ascii=False) == json.dumps(expected, indent=4, ensure_ascii=False)


def test_import_does_not_mutate_input(fixtures_dir: Path) -> None:
    original = json.loads((fixtures_dir / "sc012_memtracebench_like.json").read_text(encoding="utf-8"))
    snapshot = json.dumps(original)
    ExecNetwork.import_graph(original)
    assert json.dumps(original) == snapshot
    assert "annotations" in original["data"]


def test_reference_fixture_program_runs_unchanged(fixtures_dir: Path, tmp_path: Path) -> None:
    script = fixtures_dir / "make_sc012_fixtures.py"
    env = {"PYTHONPATH": str(REPO), "PATH": "/usr/bin:/bin"}
    result = subprocess.run(
        [sys.executable, str(script), str(tmp_path)], capture_output=True, text=True, env=env, timeout=120
    )
    assert result.returncode == 0, result.stderr
    assert "score= 0.0" in result.stdout and "score= 1.0" in result.stdout
    for name in FIXTURE_NAMES:
        ours = json.loads((tmp_path / name).read_text(encoding="utf-8"))
        reference = json.loads((fixtures_dir / name).read_text(encoding="utf-8"))
        assert normalize(ours) == normalize(reference), name


def _run_probe(probe: str, fixtures_dir: Path, out: Path) -> dict:
    env = {"PYTHONPATH": str(REPO), "PATH": "/usr/bin:/bin"}
    result = subprocess.run(
        [sys.executable, str(GOLDEN / probe), str(fixtures_dir), str(out)],
        capture_output=True, text=True, env=env, timeout=120,
    )
    assert result.returncode == 0, result.stderr
    return json.loads(out.read_text(encoding="utf-8"))


def test_renderings_match_reference_output(fixtures_dir: Path, tmp_path: Path) -> None:
    """XML/Markdown of nodes, edges, ops, sessions and subgraphs, byte for byte."""
    reference = json.loads((GOLDEN / "ref_render.json").read_text(encoding="utf-8"))
    ours = _run_probe("render_probe.py", fixtures_dir, tmp_path / "render.json")
    mismatched = [key for key in reference if ours.get(key) != reference[key]]
    assert not mismatched, f"{len(mismatched)} renderings differ, e.g. {mismatched[:3]}"


def test_queries_and_set_algebra_match_reference(fixtures_dir: Path, tmp_path: Path) -> None:
    """bfs, closures, filters, searches and RuntimeGraph algebra give the reference's answers."""
    reference = json.loads((GOLDEN / "ref_alg.json").read_text(encoding="utf-8"))
    ours = _run_probe("algebra_probe.py", fixtures_dir, tmp_path / "alg.json")
    mismatched = {key: (reference[key], ours.get(key)) for key in reference if ours.get(key) != reference[key]}
    assert not mismatched
