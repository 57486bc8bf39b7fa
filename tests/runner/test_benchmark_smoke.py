import importlib.util
import json
from pathlib import Path

BENCH = Path(__file__).resolve().parents[2] / "benchmarks" / "retrieval_locomo.py"


def load():
    spec = importlib.util.spec_from_file_location("retrieval_locomo", BENCH)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_retrieval_benchmark_runs_on_one_conversation(locomo_path, tmp_path, capsys):
    bench = load()
    out = tmp_path / "r.json"
    code = bench.main(["--locomo-path", str(locomo_path), "--limit-conversations", "1", "--embedding-provider", "hashing",
                       "--k", "4", "--max-questions", "40", "--work-dir", str(tmp_path / "work"), "--output-path", str(out)])
    assert code == 0
    data = json.loads(out.read_text())
    assert data["conversations"] == 1 and data["questions"] == 40
    names = [r["name"] for r in data["results"]]
    assert names == ["reference", "ours"]
    for r in data["results"]:
        assert len(r["recall"]) == 9  # 3 query types x 3 retrieval types
        for row in r["recall"].values():
            assert 0.0 <= row["recall@4"]["micro"] <= 1.0
    ours = data["results"][1]["recall"]["query_with_golden_answer/sparse"]["recall@4"]["micro"]
    assert ours > 0.3  # golden answer + question finds the evidence message often
    assert "| query_only | hybrid |" in capsys.readouterr().out


def test_queries_skip_adversarial_and_use_standin_predictions(locomo_path, tmp_path):
    bench = load()
    conversations = bench.trace_locomo(locomo_path, tmp_path, 1)
    queries = bench.build_queries(conversations, seed=1)
    assert all(q["question_type"] != "adversarial" for q in queries)
    assert all(q["prediction"] != q["golden_answer"] for q in queries)
    assert all(q["query"].startswith("'") or q["query"].startswith('"') for q in queries)  # repr(question)
    assert queries == bench.build_queries(conversations, seed=1)
