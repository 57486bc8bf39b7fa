"""The iterative LLM report with scripted models: versions, retries, stopping and resuming."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from openai import APIConnectionError

from membase.clients import STRUCTURED_OUTPUT_TOOL, CredentialError, ScriptedChatModel, ToolCall
from toolkits.report import ReportConfig, ReportRunner, render_cases
from toolkits.report.pipeline import analyse
from toolkits.report.prompts import FINAL_BATCH_NOTE, NO_REPORT_YET

OVERVIEW = "A memory system under test."
STATS = "Some statistics."


def version(report: str) -> ToolCall:
    return ToolCall(name=STRUCTURED_OUTPUT_TOOL, args={"rationale": f"why {report}", "report": report})


class Models:
    """A model factory that hands out one scripted model per batch and keeps them."""

    def __init__(self, script: dict[int, list]) -> None:
        self.script = script
        self.made: list[tuple[int, ScriptedChatModel]] = []

    def __call__(self, batch_index: int) -> ScriptedChatModel:
        turns = self.script[batch_index]
        model = ScriptedChatModel([turns.pop(0)] if turns else [])
        self.made.append((batch_index, model))
        return model

    def task_text(self, position: int) -> str:
        """The text of every user message of the first call of the ``position``-th model."""
        messages = self.made[position][1].calls[0].messages
        return "\n".join(_text(m["content"]) for m in messages if m["role"] == "user")


def _text(content) -> str:
    if isinstance(content, str):
        return content
    return "\n".join(part.get("text", "") for part in content if isinstance(part, dict))


async def _no_sleep(_seconds: float) -> None:
    return None


@pytest.fixture(scope="module")
def cases(outputs_dir):
    analysis = analyse([outputs_dir / "long_context.json", outputs_dir / "rag.json"])
    rendered, unrenderable = render_cases(analysis.inputs.records, analysis.graphs, max_op_xml_tokens=2000)
    assert not unrenderable and len(rendered) >= 5
    return rendered


def _runner(models: Models, **config) -> ReportRunner:
    return ReportRunner(ReportConfig(batch_size=2, retry_backoff_s=0.0, **config), model_factory=models, sleep=_no_sleep)


def test_scripted_model_refines_one_report_batch_by_batch(cases, tmp_path: Path):
    n_batches = (len(cases) + 1) // 2
    models = Models({i: [version(f"report v{i + 1}")] for i in range(n_batches)})
    outcome = _runner(models).run(cases, overview=OVERVIEW, statistics=STATS, save_folder=tmp_path)
    assert outcome.complete and outcome.failure is None
    assert outcome.report == f"report v{n_batches}"
    assert outcome.batches_done == outcome.batches_total == n_batches
    # the system prompt carries the overview; each batch sees the previous report and its own cases
    system = models.made[0][1].calls[0].messages[0]
    assert system["role"] == "system" and OVERVIEW in json.dumps(system)
    first, second, last = models.task_text(0), models.task_text(1), models.task_text(n_batches - 1)
    assert NO_REPORT_YET in first and "#### Failed Case 1\n" in first and "#### Failed Case 3\n" not in first
    assert "report v1" in second and "#### Failed Case 3\n" in second and NO_REPORT_YET not in second
    assert FINAL_BATCH_NOTE in last and FINAL_BATCH_NOTE not in first
    assert STATS in first
    # every version is on disk, numbered by batch, with its cases and usage
    saved = sorted((tmp_path / "report_versions").glob("version_*.json"))
    assert [json.loads(p.read_text())["report"] for p in saved] == [f"report v{i + 1}" for i in range(n_batches)]
    v1 = json.loads(saved[0].read_text())
    assert v1["case_indices"] == [cases[0].index, cases[1].index] and v1["usage"]["num_calls"] == 1
    assert (tmp_path / "report_versions" / "version_001.md").read_text() == "report v1\n"
    assert outcome.costs["model_calls"] == n_batches and outcome.costs["input_tokens"] > 0


def test_failing_batch_is_retried_then_stops_with_the_last_good_report(cases, tmp_path: Path):
    boom = APIConnectionError(request=__import__("httpx").Request("POST", "http://127.0.0.1/v1"))
    models = Models({0: [version("good v1")], 1: [boom, "no tool call, just text", boom]})
    outcome = _runner(models, max_retries=2).run(cases, overview=OVERVIEW, statistics=STATS, save_folder=tmp_path)
    assert not outcome.complete
    assert outcome.report == "good v1" and outcome.batches_done == 1
    assert [index for index, _ in models.made] == [0, 1, 1, 1]  # batch 2 tried three times, batch 3 never
    assert outcome.failure.startswith(f"batch 2/{outcome.batches_total} failed after 3 attempt(s): model error: ")
    assert "\n" not in outcome.failure
    assert [p.name for p in sorted((tmp_path / "report_versions").glob("*.json"))] == ["version_001.json"]
    assert outcome.costs["attempts"] == 4


def test_rerun_resumes_after_the_last_saved_batch(cases, tmp_path: Path):
    n_batches = (len(cases) + 1) // 2
    first = Models({0: [version("v1")], 1: [RuntimeError("down")]})
    stopped = _runner(first, max_retries=0).run(cases, overview=OVERVIEW, statistics=STATS, save_folder=tmp_path)
    assert stopped.batches_done == 1 and stopped.failure
    second = Models({i: [version(f"v{i + 1}")] for i in range(n_batches)})
    resumed = _runner(second).run(cases, overview=OVERVIEW, statistics=STATS, save_folder=tmp_path)
    assert resumed.complete and resumed.resumed_batches == 1
    assert [index for index, _ in second.made] == list(range(1, n_batches))  # batch 1 is not run again
    assert "v1" in second.task_text(0) and "#### Failed Case 3\n" in second.task_text(0)
    assert resumed.report == f"v{n_batches}"
    # a third run has nothing left to do and calls no model
    third = Models({})
    again = _runner(third).run(cases, overview=OVERVIEW, statistics=STATS, save_folder=tmp_path)
    assert again.complete and third.made == [] and again.report == resumed.report


def test_versions_of_another_run_are_not_resumed(cases, tmp_path: Path):
    models = Models({0: [version("v1")], 1: [RuntimeError("down")]})
    _runner(models, max_retries=0).run(cases, overview=OVERVIEW, statistics=STATS, save_folder=tmp_path)
    with pytest.raises(ValueError, match="--restart"):
        _runner(Models({})).run(cases, overview="another overview", statistics=STATS, save_folder=tmp_path)
    n_batches = (len(cases) + 1) // 2
    fresh = Models({i: [version(f"w{i + 1}")] for i in range(n_batches)})
    outcome = _runner(fresh).run(cases, overview="another overview", statistics=STATS, save_folder=tmp_path,
                                 restart=True)
    assert outcome.complete and outcome.resumed_batches == 0 and [i for i, _ in fresh.made][0] == 0


def test_missing_credentials_fail_before_any_model_call(cases, tmp_path: Path, monkeypatch):
    for key in ("OPENAI_BASE_URL", "OPENAI_API_BASE", "OPENAI_API_KEY"):
        monkeypatch.delenv(key, raising=False)
    with pytest.raises(CredentialError):
        ReportRunner(ReportConfig()).run(cases, overview=OVERVIEW, statistics=STATS, save_folder=tmp_path)
    assert not (tmp_path / "report_versions").exists()


def test_an_empty_report_counts_as_a_failed_attempt(cases, tmp_path: Path):
    models = Models({0: [version("   "), version("real")], 1: [version("b2")], 2: [version("b3")]})
    outcome = _runner(models, max_retries=1).run(cases[:4], overview=OVERVIEW, statistics=STATS, save_folder=tmp_path)
    assert outcome.complete and outcome.report == "b2"
    assert [i for i, _ in models.made] == [0, 0, 1]


# ------------------------------------------------------------------------ keys, timeouts, interrupts

SECRET = "sk-report-secret-0123456789abcdef"


def _keyed_runner(tmp_path: Path, factory, **config) -> ReportRunner:
    """A runner on the default model path (credential pool from an API config file), whose model
    construction is replaced by ``factory`` so that the pool's key is known and redacted."""
    api_config = tmp_path / "api_config.json"
    api_config.write_text(json.dumps({"api_keys": [SECRET], "base_urls": ["http://127.0.0.1:9/v1"]}))
    runner = ReportRunner(ReportConfig(batch_size=2, retry_backoff_s=0.0, api_config_path=str(api_config), **config),
                          sleep=_no_sleep)
    runner._default_model = factory  # the credential pool is still resolved and its key masked
    return runner


def test_a_key_in_a_long_error_is_masked_before_the_failure_is_cut(cases, tmp_path: Path):
    # the key straddles the point where the one-line failure is shortened: cutting first would
    # leave its first half unmasked
    error = RuntimeError("x" * 380 + f" {SECRET} trailing words")
    runner = _keyed_runner(tmp_path, lambda _i: ScriptedChatModel([error]), max_retries=0)
    outcome = runner.run(cases, overview=OVERVIEW, statistics=STATS, save_folder=tmp_path / "out")
    assert outcome.failure is not None and "\n" not in outcome.failure and len(outcome.failure) <= 400
    assert not any(SECRET[:n] in outcome.failure for n in range(6, len(SECRET) + 1))


def test_a_report_that_echoes_the_key_is_saved_masked(cases, tmp_path: Path):
    runner = _keyed_runner(tmp_path, lambda _i: ScriptedChatModel([version(f"the key is {SECRET}")]))
    outcome = runner.run(cases[:2], overview=OVERVIEW, statistics=STATS, save_folder=tmp_path / "out")
    assert outcome.report == "the key is ***"
    saved = (tmp_path / "out" / "report_versions" / "version_001.json").read_text()
    assert SECRET not in saved and SECRET not in (tmp_path / "out" / "report_versions" / "version_001.md").read_text()


def test_a_batch_over_its_time_limit_is_a_timeout_failure(cases, tmp_path: Path):
    import asyncio

    from membase.clients import FunctionChatModel

    async def slow(_messages, _tools, _choice):
        await asyncio.sleep(30)
        return version("too late")

    models = Models({})
    runner = ReportRunner(ReportConfig(batch_size=2, retry_backoff_s=0.0, max_retries=1, batch_timeout_s=0.2),
                          model_factory=lambda i: models.made.append((i, None)) or FunctionChatModel(slow),
                          sleep=_no_sleep)
    outcome = runner.run(cases, overview=OVERVIEW, statistics=STATS, save_folder=tmp_path)
    assert outcome.failure == f"batch 1/{outcome.batches_total} failed after 2 attempt(s): timeout: no report within 0.2 s"
    assert [i for i, _ in models.made] == [0, 0] and outcome.report is None
    assert outcome.costs["minutes"] * 60 < 5  # both attempts were cut at the limit
