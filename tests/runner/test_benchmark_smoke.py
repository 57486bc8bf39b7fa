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


def test_attribution_scale_benchmark_runs_small(tmp_path, capsys):
    spec = importlib.util.spec_from_file_location("attribution_scale", BENCH.parent / "attribution_scale.py")
    bench = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(bench)
    assert bench.build_benchmark(BENCH.parents[1] / "examples" / "faultbench", "rag", 7, tmp_path / "b") == 7
    files = sorted((tmp_path / "b" / "rag").glob("*.json"))
    assert sum(len(json.loads(f.read_text())["data"]["annotations"]) for f in files) == 7
    out = tmp_path / "rows.json"
    assert bench.main(["--sizes", "4", "8", "--split", "rag", "--work-dir", str(tmp_path / "w"),
                       "--json-out", str(out)]) == 0
    rows = json.loads(out.read_text())
    assert [r["cases"] for r in rows] == [4, 8] and all(r["failed_cases"] == 0 for r in rows)
    printed = capsys.readouterr().out
    assert "| cases | wall s | cpu s | per case ms | output MB |" in printed and "per-case time ratio, 8 vs 4" in printed
