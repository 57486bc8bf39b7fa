from __future__ import annotations

import json

import pytest

from membase.cli import main


@pytest.fixture
def lc_config(tmp_path):
    path = tmp_path / "lc.json"
    path.write_text(json.dumps({"layer_type": "Long-Context", "context_window": 50000}))
    return path


def _one_line_error(capsys) -> str:
    err = capsys.readouterr().err.strip()
    assert err.startswith("error: ") and "\n" not in err and "Traceback" not in err
    return err


@pytest.mark.slow
def test_run_end_to_end_with_fake_models(lc_config, locomo_path, tmp_path, capsys):
    out = tmp_path / "out"
    rc = main(["run", "--layer-config", str(lc_config), "--dataset", str(locomo_path), "--start-idx", "1",
               "--end-idx", "2", "--output-dir", str(out), "--quiet", "--top-k", "1",
               "--skip-question-types", "adversarial",
               "--qa-model", "fake:I do not know", "--judge-model", 'fake:{"label": "WRONG"}'])
    assert rc == 0
    summary = json.loads(capsys.readouterr().out)
    assert summary["construction"]["users_done"] == 1 and summary["evaluation"]["failures"] == 0
    assert summary["evaluation"]["metrics"]["all"]["llm_judge"] == 0.0
    for stage in ("construction", "search", "evaluation"):
        assert (out / "traced_data" / "locomo-2" / f"graph_{stage}.json").is_file()
    results = json.loads((out / "memory" / "1_1_2_evaluation.json").read_text())
    assert results and all(r["metrics"]["llm_judge"]["value"] == 0.0 for r in results)
    assert all(r["qa_pair"]["metadata"]["question_type"] != "adversarial" for r in results)


def test_wrong_config_key_is_one_clear_message(tmp_path, locomo_path, capsys):
    cfg = tmp_path / "bad.json"
    cfg.write_text(json.dumps({"layer_type": "NaiveRAG", "max_tokenz": 10}))
    assert main(["construct", "--layer-config", str(cfg), "--dataset", str(locomo_path),
                 "--output-dir", str(tmp_path / "o")]) == 2
    assert "max_tokenz" in _one_line_error(capsys)
    assert not (tmp_path / "o").exists()


@pytest.mark.parametrize(
    "content, expected",
    [
        ({"layer_type": "Nope"}, "unknown layer_type 'Nope'"),
        ({"context_window": 3}, "layer_type key"),
        ({"layer_type": "Long-Context", "user_id": "x"}, "remove 'user_id'"),
        ({"layer_type": "Long-Context", "context_window": "big"}, "context_window"),
    ],
)
def test_bad_layer_configs(tmp_path, locomo_path, capsys, content, expected):
    cfg = tmp_path / "c.json"
    cfg.write_text(json.dumps(content))
    assert main(["search", "--layer-config", str(cfg), "--dataset", str(locomo_path)]) == 2
    assert expected in _one_line_error(capsys)


def test_missing_files(lc_config, tmp_path, capsys):
    assert main(["construct", "--layer-config", str(lc_config), "--dataset", str(tmp_path / "none.json")]) == 2
    assert "not found" in _one_line_error(capsys)
    assert main(["construct", "--layer-config", str(tmp_path / "none.json")]) == 2
    assert "layer config" in _one_line_error(capsys)
    assert main(["evaluate", "--layer-config", str(lc_config), "--search-results", str(tmp_path / "r.json"),
                 "--qa-model", "fake:x", "--judge-model", "fake:y"]) == 2
    assert "run the search stage first" in _one_line_error(capsys)


def test_missing_credentials_is_one_clear_message(lc_config, tmp_path, capsys, monkeypatch):
    for key in ("OPENAI_API_KEY", "OPENAI_BASE_URL", "OPENAI_API_BASE"):
        monkeypatch.delenv(key, raising=False)
    (tmp_path / "r.json").write_text("[]")
    assert main(["evaluate", "--layer-config", str(lc_config), "--search-results", str(tmp_path / "r.json")]) == 2
    assert "no model credentials" in _one_line_error(capsys)


@pytest.mark.slow
def test_unreachable_endpoint_is_one_clear_message(lc_config, locomo_path, tmp_path, capsys):
    import socket

    from membase.clients.guard import allow_model_requests

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    api = tmp_path / "api.json"
    api.write_text(json.dumps({"api_keys": ["k"], "base_urls": [f"http://127.0.0.1:{port}/v1"]}))
    out = tmp_path / "out"
    common = ["--layer-config", str(lc_config), "--dataset", str(locomo_path), "--start-idx", "0", "--end-idx", "1",
              "--output-dir", str(out), "--quiet"]
    assert main(["construct", *common]) == 0 and main(["search", *common, "--top-k", "1"]) == 0
    capsys.readouterr()
    with allow_model_requests():
        rc = main(["evaluate", *common, "--top-k", "1", "--api-config", str(api), "--max-retries", "0", "--qa-model", "m",
                   "--judge-model", "fake:x"])
    assert rc == 2
    assert "unreachable" in _one_line_error(capsys)
    assert json.loads((out / "memory" / "1_0_1_evaluation.json").read_text()) == []


def test_sample_flags_pick_trajectories(lc_config, locomo_path, tmp_path, capsys):
    out = tmp_path / "out"
    args = ["construct", "--layer-config", str(lc_config), "--dataset", str(locomo_path), "--start-idx", "0",
            "--end-idx", "4", "--sample-size", "1", "--seed", "3", "--output-dir", str(out), "--quiet", "--no-tracing"]
    assert main(args) == 0
    users = [p.name for p in (out / "memory").iterdir() if p.is_dir()]
    assert len(users) == 1 and users[0] in {"locomo-1", "locomo-2", "locomo-3", "locomo-4"}
    assert not (out / "traced_data").exists()


@pytest.mark.parametrize("flags", [["--start-idx", "2", "--end-idx", "2"], ["--start-idx", "3", "--end-idx", "1"],
                                   ["--start-idx", "-1"]])
def test_an_empty_or_negative_slice_is_a_usage_error(lc_config, locomo_path, tmp_path, capsys, flags):
    with pytest.raises(SystemExit) as exit_info:
        main(["search", "--layer-config", str(lc_config), "--dataset", str(locomo_path),
              "--output-dir", str(tmp_path / "o"), "--quiet", *flags])
    assert exit_info.value.code == 2
    assert "--start-idx" in capsys.readouterr().err
    assert not (tmp_path / "o").exists()


def test_a_slice_past_the_dataset_end_is_one_clear_message(lc_config, locomo_path, tmp_path, capsys):
    assert main(["construct", "--layer-config", str(lc_config), "--dataset", str(locomo_path),
                 "--start-idx", "50", "--end-idx", "60", "--output-dir", str(tmp_path / "o"), "--quiet"]) == 2
    assert "selects no trajectory" in _one_line_error(capsys)


def test_a_config_that_is_not_utf8_is_one_clear_message(tmp_path, locomo_path, capsys):
    cfg = tmp_path / "latin1.json"
    cfg.write_bytes('{"layer_type": "Long-Context", "message_separator": "\u00e9"}'.encode("latin-1"))
    assert main(["construct", "--layer-config", str(cfg), "--dataset", str(locomo_path),
                 "--output-dir", str(tmp_path / "o")]) == 2
    assert "not UTF-8" in _one_line_error(capsys)


@pytest.mark.parametrize("layer_type", [["Long-Context"], {"name": "NaiveRAG"}, 3, None])
def test_a_layer_type_that_is_not_a_name_is_one_clear_message(tmp_path, locomo_path, capsys, layer_type):
    cfg = tmp_path / "c.json"
    cfg.write_text(json.dumps({"layer_type": layer_type}))
    assert main(["construct", "--layer-config", str(cfg), "--dataset", str(locomo_path),
                 "--output-dir", str(tmp_path / "o")]) == 2
    assert "layer_type" in _one_line_error(capsys)


@pytest.mark.parametrize(
    "content, field",
    [
        ({"layer_type": "Long-Context", "context_window": -5}, "context_window"),
        ({"layer_type": "Long-Context", "context_window": 0}, "context_window"),
        ({"layer_type": "Long-Context", "context_window": True}, "context_window"),
        ({"layer_type": "Long-Context", "context_window": "4000"}, "context_window"),
        ({"layer_type": "Long-Context", "context_window": 4000.5}, "context_window"),
        ({"layer_type": "NaiveRAG", "max_tokens": 0}, "max_tokens"),
        ({"layer_type": "NaiveRAG", "num_overlap_msgs": -1}, "num_overlap_msgs"),
        ({"layer_type": "NaiveRAG", "retriever_dim": False}, "retriever_dim"),
        ({"layer_type": "NaiveRAG", "deferred": "yes"}, "deferred"),
        ({"layer_type": "Mem0", "embedding_model_dims": True}, "embedding_model_dims"),
        ({"layer_type": "EverMemOS", "embedding_config": {"embedding_dims": True}}, "embedding_dims"),
    ],
)
def test_bad_sizes_and_types_are_one_clear_message(tmp_path, locomo_path, capsys, content, field):
    cfg = tmp_path / "c.json"
    cfg.write_text(json.dumps(content))
    assert main(["construct", "--layer-config", str(cfg), "--dataset", str(locomo_path),
                 "--output-dir", str(tmp_path / "o")]) == 2
    assert field in _one_line_error(capsys)
    assert not (tmp_path / "o").exists()


def test_the_readme_layer_configs_still_validate(tmp_path):
    from membase.cli import _load_layer_config

    for content in (
        {"layer_type": "Long-Context", "context_window": 4000},
        {"layer_type": "NaiveRAG", "max_tokens": 1200, "deferred": True, "retriever_dim": 2560,
         "embedding_kwargs": {"base_url": "http://127.0.0.1:8000/v1", "api_key": "EMPTY"}},
        {"layer_type": "Mem0", "llm_provider": "fake", "embedder_provider": "fake", "embedding_model_dims": 64},
        {"layer_type": "EverMemOS", "llm_config": {"provider": "fake"},
         "embedding_config": {"provider": "fake", "embedding_dims": 64}},
    ):
        cfg = tmp_path / "c.json"
        cfg.write_text(json.dumps(content))
        assert _load_layer_config(str(cfg))[0] == content["layer_type"]
