"""The two optimizer backends side by side on one scripted scenario (no network, no key).

Both ``--optimizer textgrad`` (the paper's three-stage optimizer) and ``--optimizer gepa`` run
``run_optimization.py`` on the real mem0ai 1.0.5 layer with its deterministic LLM. The scripted
QA model answers right only under an answer template that begins with "Evidence:"; the scripted
optimizer (three-stage) and reflection model (GEPA) both propose such a template for the QA
prompt and a valid decision prompt for Mem0's update prompt. So both backends *can* find the
fix; the table shows what each accepted, at what cost in memory-system runs, and the held-out
score.

**Same evaluation budget.** The budget is counted in conversation evaluations (one conversation
built, searched and answered with one configuration). The three-stage optimizer runs first, with
its validation gate on (conversations 3 and 4, held in): one evaluation per round plus the gate's
(the round's configuration and each proposed update alone on both validation conversations).
GEPA then gets exactly that many as ``--gepa-max-metric-calls``. What each accepted and why:
``<work-dir>/textgrad/iteration_<k>/iteration_summary.json`` → ``validation_gate`` (per target:
its score, its gain, accepted or not) and ``<work-dir>/gepa/gepa/gepa.log`` ("Accepted candidate
(subsample score a -> b)" or "... is not better ..., skipping") with ``selections.jsonl`` (which
component and the failure counts that picked it); ``results.json`` sums them up.

Run (a few minutes on 2 cores)::

    python benchmarks/optimization_backends.py --work-dir runs/optimization_backends
"""

from __future__ import annotations

import argparse
import json
import re
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]

DEFAULT_LOCOMO = ROOT.parent / "shared" / "data" / "locomo" / "locomo10.json"
BETTER_QA = "Evidence:\n$context\nQuestion: $question\nAnswer in a few words:"
DECISION = "For each new fact choose ADD, UPDATE, DELETE or NONE; keep dates and names exact."


def _scripted_models(dataset_path: Path, max_sessions: int, max_questions: int) -> tuple[Any, Any]:
    from membase.clients.fake import FunctionChatModel
    from toolkits.optimization.sampling import load_full_dataset

    full = load_full_dataset(dataset_path, max_sessions=max_sessions, max_questions=max_questions)
    answers = {q.question: q.golden_answers[0] for qs in full.qa_pair_lists for q in qs}

    def qa(messages: list[dict[str, Any]], **_kw: Any) -> str:
        prompt = messages[-1]["content"]
        question = re.search(r"Question: (?:\w+: )?(.*)", prompt)
        text = question.group(1).strip() if question else ""
        return answers.get(text, "no idea") if prompt.startswith("Evidence:") else "no idea"

    def judge(messages: list[dict[str, Any]], **_kw: Any) -> str:
        prompt = messages[-1]["content"]
        reference = re.search(r"Reference answer: (.*)", prompt)
        answer = re.search(r"Answer to grade: (.*)", prompt)
        ok = reference and answer and answer.group(1).strip() and answer.group(1).strip() in reference.group(1)
        return '{"label": "CORRECT"}' if ok else '{"label": "WRONG"}'

    return FunctionChatModel(qa, model="scripted-qa"), FunctionChatModel(judge, model="scripted-judge")


def _three_stage_optimizer(_call_index: int) -> Any:
    from membase.clients import STRUCTURED_OUTPUT_TOOL, FunctionChatModel, ToolCall

    def fn(messages: list[Any], tools: list[str], _choice: Any) -> Any:
        content = messages[1]["content"] if len(messages) > 1 else ""
        text = content if isinstance(content, str) else "".join(p.get("text", "") for p in content)
        if STRUCTURED_OUTPUT_TOOL not in tools:
            return "thinking"
        block = text.split("## Failure")[0].split("## Feedback")[0]
        value = BETTER_QA if "question-answering-prompt" in block else DECISION
        return ToolCall(name=STRUCTURED_OUTPUT_TOOL, args={"rationale": "scripted", "feedback": "answer from evidence",
                                                           "aggregated_feedback": "answer from evidence",
                                                           "improved_value": value})

    return FunctionChatModel(fn)


def _reflect(prompt: Any) -> str:
    text = prompt if isinstance(prompt, str) else json.dumps(prompt)
    return f"```\n{DECISION if 'NONE' in text else BETTER_QA}\n```"


def _conversation_evaluations(out: Path) -> int:
    """Conversations the three-stage run evaluated: its rounds' and its gate's (each run's construction report)."""
    total = 0
    for path in out.glob("iteration_*/**/construction_report.json"):
        report = json.loads(path.read_text())
        total += len(report["users_done"]) + len(report["users_failed"])
    return total


def _textgrad_decisions(out: Path) -> list[dict[str, Any]]:
    """Per round: the gate's verdict on each proposed update (score with it alone, gain, accepted)."""
    rounds = []
    for folder in sorted(out.glob("iteration_*"), key=lambda p: int(p.name.rpartition("_")[2])):
        gate = json.loads((folder / "iteration_summary.json").read_text())["validation_gate"] or {}
        rounds.append({"round": folder.name, "accepted": gate.get("accepted_fields", []),
                       "rejected": gate.get("rejected_fields", []),
                       "gains": {f: v["gain"] for f, v in gate.get("per_target", {}).items()}})
    return rounds


def _gepa_decisions(out: Path) -> list[str]:
    """GEPA's own acceptance lines: accepted (subsample score a -> b) or not better, skipped."""
    log = (out / "gepa" / "gepa.log").read_text()
    return [line for line in log.splitlines() if "Accepted candidate" in line or "is not better" in line]


def _row(backend: str, out: Path, started: float) -> dict[str, Any]:
    report = json.loads((out / "final_evaluation.json").read_text())
    judge_m = report["metrics"]["llm_judge"]
    if backend == "gepa":
        summary = json.loads((out / "gepa_summary.json").read_text())
        budget, decisions = summary["total_metric_calls"], _gepa_decisions(out)
        runs = summary["memory_system_runs"] + (out / "gepa" / "seed_run").is_dir()  # the seed run reads unset prompts
    else:
        budget = runs = _conversation_evaluations(out)
        decisions = _textgrad_decisions(out)
    return {"before": judge_m["before"], "after": judge_m["after"], "conversation_evaluations": budget,
            "memory_system_runs": runs,
            "qa_prompt_changed": report["final_bundle"].get("question_answering_prompt") is not None,
            "decisions": decisions, "wall_seconds": time.perf_counter() - started}


def main(argv: Sequence[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--dataset-path", default=str(DEFAULT_LOCOMO))
    p.add_argument("--work-dir", default="runs/optimization_backends")
    p.add_argument("--config-path", default=str(ROOT / "examples" / "configs" / "mem0_offline.json"),
                   help="layer config (default: the offline Mem0 layer)")
    p.add_argument("--targets", default="question_answering_prompt,custom_update_memory_prompt")
    p.add_argument("--max-sessions", type=int, default=1)
    p.add_argument("--max-questions", type=int, default=3)
    p.add_argument("--seed", type=int, default=3)
    args = p.parse_args(argv)

    from toolkits.optimization import command as optimization_command
    from toolkits.optimization import gepa_backend, pipeline

    qa, judge = _scripted_models(Path(args.dataset_path), args.max_sessions, args.max_questions)
    real = pipeline.chat_model_from_spec, gepa_backend.reflection_model
    pipeline.chat_model_from_spec = lambda spec, **_kw: qa if spec == "qa" else judge  # type: ignore[assignment]
    gepa_backend.reflection_model = lambda _spec, **_kw: _reflect  # type: ignore[assignment]
    common = ["--config-path", args.config_path, "--dataset-path",
              args.dataset_path, "--sample-size", "2", "--seed", str(args.seed), "--attribution-strategy",
              "evidence_flow", "--targets", args.targets, "--optimizer-model", "scripted",
              "--qa-model", "qa", "--judge-model", "judge", "--max-sessions", str(args.max_sessions),
              "--max-questions", str(args.max_questions), "--eval-trajectories", "5,6", "--no-progress", "--rerun"]
    work = Path(args.work_dir)
    rows: dict[str, Any] = {}
    try:
        for backend in ("textgrad", "gepa"):
            out = work / backend
            extra = (["--validation-gate", "--validation-trajectories", "3,4"] if backend == "textgrad" else
                     ["--optimizer", "gepa", "--gepa-max-metric-calls", str(rows["textgrad"]["conversation_evaluations"])])
            started = time.perf_counter()
            code = optimization_command.main([*common, *extra, "--optimization-dir", str(out)],
                                         optimizer_model_factory=_three_stage_optimizer)
            if code != 0:
                return code
            rows[backend] = _row(backend, out, started)
    finally:
        pipeline.chat_model_from_spec, gepa_backend.reflection_model = real  # type: ignore[assignment]
    print(f"{'backend':<9} {'held-out judge':>16} {'evaluations':>12} {'system runs':>12} {'QA prompt':>10} {'wall s':>7}")
    for name, r in rows.items():
        print(f"{name:<9} {r['before']:>7.4f} -> {r['after']:.4f} {r['conversation_evaluations']:>12} "
              f"{r['memory_system_runs']:>12} {'changed' if r['qa_prompt_changed'] else 'default':>10} "
              f"{r['wall_seconds']:>7.0f}")
    (work / "results.json").write_text(json.dumps(rows, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
