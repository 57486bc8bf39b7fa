import json

import pytest

from toolkits import retrieval_cli


def test_recall_lines_per_source_and_overall(bench_dir, tmp_path, capsys):
    out = tmp_path / "recall.json"
    code = retrieval_cli.main(
        [str(bench_dir), "mem0", "--k", "1", "--retrieval-type", "sparse", "--output-path", str(out)]
    )
    assert code == 0
    lines = capsys.readouterr().out.strip().splitlines()
    assert lines[0].startswith("recall@1 (LoCoMo): micro=")
    assert lines[1].startswith("recall@1 (LongMemEval): micro=")
    assert lines[2].startswith("recall@1 (overall): micro=") and lines[2].endswith("(4 cases)")
    data = json.loads(out.read_text())
    # query + golden answer "Sweden" finds U1:D2:2 at rank 1 for both of its cases
    assert data["recall"]["overall"]["cases"] == 4
    assert data["recall"]["overall"]["micro"] >= 0.5


@pytest.mark.parametrize("retrieval_type", ["dense", "hybrid"])
def test_dense_types_run_with_fake_embedder(bench_dir, retrieval_type, capsys):
    code = retrieval_cli.main(
        [str(bench_dir), "mem0", "--k", "5", "--retrieval-type", retrieval_type, "--embedding-provider", "hashing"]
    )
    assert code == 0
    overall = capsys.readouterr().out.strip().splitlines()[-1]
    assert "micro=1.0000 macro=1.0000 (4 cases)" in overall  # k=5 covers all 5 messages


def test_reference_algorithm_flag(bench_dir, capsys):
    assert retrieval_cli.main([str(bench_dir), "mem0", "--k", "2", "--retrieval-type", "sparse",
                                            "--retrieval-algorithm", "reference"]) == 0
    assert "(overall)" in capsys.readouterr().out


def test_missing_data_exit_2(tmp_path, capsys):
    assert retrieval_cli.main([str(tmp_path), "rag"]) == 2
    assert "error:" in capsys.readouterr().err


def _unreachable_errors():
    import httpx
    import openai

    from membase.exceptions import ModelUnreachableError

    return [
        ModelUnreachableError("embedding endpoint http://127.0.0.1:9/v1 is unreachable"),
        ConnectionRefusedError(111, "Connection refused"),
        openai.APIConnectionError(request=httpx.Request("POST", "http://127.0.0.1:9/v1/embeddings")),
    ]


@pytest.mark.parametrize("error", _unreachable_errors(), ids=lambda e: type(e).__name__)
def test_embedding_endpoint_down_exits_2_without_traceback(bench_dir, capsys, monkeypatch, error):
    import toolkits._embeddings

    class Down:
        def __getattr__(self, name):
            if name == "close":
                return lambda: None
            raise error

    monkeypatch.setattr(toolkits._embeddings, "make_embedder", lambda *a, **k: Down())
    code = retrieval_cli.main([str(bench_dir), "mem0", "--retrieval-type", "dense",
                                            "--embedding-provider", "openai", "--embedding-base-url",
                                            "http://127.0.0.1:9/v1", "--embedding-api-key", "k"])
    err = capsys.readouterr().err
    assert code == 2 and err.startswith("error: ") and "Traceback" not in err
