"""Fixtures of the annotation-interface tests: the shared smartcomment fixtures, the committed
faultbench, a real ``python -m membase`` output folder, and an AppTest factory."""

from __future__ import annotations

import json
import os
import shutil
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

REPO = Path(__file__).resolve().parents[2]
FAULTBENCH = REPO / "examples" / "faultbench"
APP = REPO / "annotation_interface" / "app.py"
SC_FIXTURES = REPO.parent / "shared" / "fixtures" / "smartcomment-0.1.2"


def _require(path: Path, what: str) -> Path:
    if not path.exists():
        if os.environ.get("CI", "").lower() in ("1", "true", "yes"):
            pytest.fail(f"{what} not found at {path} (CI must provide it)")
        pytest.skip(f"{what} not found at {path}")
    return path


@pytest.fixture(scope="session")
def sc_fixtures() -> Path:
    """The smartcomment 0.1.2 fixture graphs (../shared); missing under CI is a failure."""
    return _require(SC_FIXTURES, "shared smartcomment fixtures")


@pytest.fixture(scope="session")
def faultbench() -> Path:
    """The committed fault-injection benchmark (MemTraceBench layout)."""
    return _require(FAULTBENCH, "examples/faultbench")


def load_json(path: Path) -> Any:
    return json.loads(path.read_text(encoding="utf-8"))


# examples/faultbench is rebuilt from time to time: tests read names, counts and questions from
# the files instead of hard-coding them.
def faultbench_files(root: Path) -> list[Path]:
    """The graph files of a MemTraceBench folder, in the data engine's display order."""
    return sorted(p for p in root.glob("*/*.json") if p.is_file())


def split_file(root: Path, split: str, *, min_questions: int = 1) -> Path:
    """The first graph of a split with at least ``min_questions`` non-adversarial questions."""
    from annotation_interface.parser import build_graph_index

    for path in sorted((root / split).glob("*.json")):
        if len(build_graph_index(load_json(path)).qas) >= min_questions:
            return path
    pytest.skip(f"no {split} graph with {min_questions} question(s) in {root}")


@pytest.fixture
def bench_like(sc_fixtures: Path) -> dict[str, Any]:
    """A fresh copy of the MemTraceBench-like fixture export (tests may mutate it)."""
    return load_json(sc_fixtures / "sc012_memtracebench_like.json")


TINY_LOCOMO = [{
    "sample_id": "conv-tiny",
    "conversation": {
        "speaker_a": "Caroline", "speaker_b": "Melanie",
        "session_1_date_time": "1:56 pm on 8 May, 2023",
        "session_1": [
            {"speaker": "Caroline", "dia_id": "D1:1", "text": "I went to the LGBTQ support group yesterday."},
            {"speaker": "Melanie", "dia_id": "D1:2", "text": "That is great, how was it?"},
            {"speaker": "Caroline", "dia_id": "D1:3", "text": "It was powerful, I felt accepted."},
        ],
        "session_2_date_time": "1:14 pm on 25 May, 2023",
        "session_2": [
            {"speaker": "Melanie", "dia_id": "D2:1", "text": "Where did you grow up, Caroline?"},
            {"speaker": "Caroline", "dia_id": "D2:2", "text": "I moved from Sweden four years ago."},
        ],
    },
    "qa": [
        {"question": "When did Caroline go to the LGBTQ support group?", "answer": "7 May 2023",
         "evidence": ["D1:1"], "category": 2},
        {"question": "Where did Caroline move from?", "answer": "Sweden", "evidence": ["D2:2"], "category": 4},
        {"question": "What did Melanie paint?", "adversarial_answer": "a lake", "evidence": ["D1:2"], "category": 5},
    ],
}]


@pytest.fixture(scope="session")
def membase_run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A real `python -m membase run` output folder (Long-Context layer, fake QA and judge models):
    traced_data/locomo-1/graph_{construction,search,evaluation}.json plus results files."""
    from membase.cli import main as membase_main

    root = tmp_path_factory.mktemp("membase_run")
    (root / "locomo.json").write_text(json.dumps(TINY_LOCOMO))
    (root / "lc.json").write_text(json.dumps({"layer_type": "Long-Context", "context_window": 4000}))
    out = root / "out"
    code = membase_main(["run", "--layer-config", str(root / "lc.json"), "--dataset", str(root / "locomo.json"),
                         "--output-dir", str(out), "--qa-model", "fake:Sweden",
                         "--judge-model", 'fake:{"label": "WRONG"}', "--metrics", "llm_judge", "--quiet"])
    assert code == 0
    assert (out / "traced_data" / "locomo-1" / "graph_evaluation.json").is_file()
    return out


@pytest.fixture
def copy_tree(tmp_path: Path) -> Callable[[Path, str], Path]:
    """Copy a file or folder into the test's tmp folder (for tests that modify their data)."""

    def copy(src: Path, name: str) -> Path:
        dst = tmp_path / name
        if src.is_dir():
            shutil.copytree(src, dst)
        else:
            dst.parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(src, dst)
        return dst

    return copy


@pytest.fixture
def app(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Callable[..., Any]:
    """``app(data, *flags)`` -> a started ``AppTest`` of the real app with those command-line flags
    (a private index folder and output file under tmp_path, annotator ``tester`` and annotated
    evidence for evidence_flow unless given)."""
    from streamlit.testing.v1 import AppTest

    def start(data: Path | str, *flags: str, output: Path | None = None, annotator: str | None = "tester") -> Any:
        argv = [str(APP), "--data", str(data)]
        if "--index-dir" not in flags:
            argv += ["--index-dir", str(tmp_path / "index")]
        if "--output-path" not in flags:
            argv += ["--output-path", str(output or tmp_path / "annotations.json")]
        if "--annotator" not in flags and annotator:
            argv += ["--annotator", annotator]
        if "--evidence-mode" not in flags:
            argv += ["--evidence-mode", "annotated"]  # no MiniLM load in every test (its own test covers it)
        monkeypatch.setattr(sys, "argv", [*argv, *flags])
        return AppTest.from_file(str(APP), default_timeout=90).run()

    return start
