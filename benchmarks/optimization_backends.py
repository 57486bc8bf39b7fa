"""The two optimizer backends side by side on one scripted scenario (no network, no key).

Both ``--optimizer textgrad`` (the paper's three-stage optimizer) and ``--optimizer gepa`` run
``run_optimization.py`` on the real mem0ai 1.0.5 layer with its deterministic LLM. The scripted
QA model answers right only under an answer template that begins with "Evidence:"; the scripted
optimizer (three-stage) and reflection model (GEPA) both propose such a template for the QA
prompt and a valid decision prompt for Mem0's update prompt. So both backends *can* find the
fix; the table shows what each accepted, at what cost in memory-system runs, and the held-out
score. What each accepted and why: ``<work-dir>/textgrad/iteration_<k>/iteration_summary.json``
and ``<work-dir>/gepa/gepa/gepa.log`` / ``selections.jsonl``.

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
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

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
    from graphtrace.agent_models import STRUCTURED_OUTPUT_TOOL, FunctionChatModel, ToolCall

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


def main(argv: Sequence[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--dataset-path", default=str(DEFAULT_LOCOMO))
    p.add_argument("--work-dir", default="runs/optimization_backends")
    p.add_argument("--max-sessions", type=int, default=1)
    p.add_argument("--max-questions", type=int, default=3)
    p.add_argument("--seed", type=int, default=3)
    args = p.parse_args(argv)

    import run_optimization
    from toolkits.optimization import gepa_backend, pipeline

    qa, judge = _scripted_models(Path(args.dataset_path), args.max_sessions, args.max_questions)
    pipeline.chat_model_from_spec = lambda spec, **_kw: qa if spec == "qa" else judge  # type: ignore[assignment]
    gepa_backend.reflection_model = lambda _spec, **_kw: _reflect  # type: ignore[assignment]
    common = ["--config-path", str(ROOT / "examples" / "configs" / "mem0_offline.json"), "--dataset-path",
              args.dataset_path, "--sample-size", "2", "--seed", str(args.seed), "--attribution-strategy",
              "evidence_flow", "--targets", "question_answering_prompt,custom_update_memory_prompt",
              "--qa-model", "qa", "--judge-model", "judge", "--max-sessions", str(args.max_sessions),
              "--max-questions", str(args.max_questions), "--eval-trajectories", "5,6", "--no-progress", "--rerun"]
    work = Path(args.work_dir)
    rows = {}
    for backend, extra in (("textgrad", ["--optimizer-model", "scripted"]),
                           ("gepa", ["--optimizer", "gepa", "--optimizer-model", "scripted",
                                     "--gepa-max-metric-calls", "8"])):
        out = work / backend
        started = time.perf_counter()
        code = run_optimization.main([*common, *extra, "--optimization-dir", str(out)],
                                     optimizer_model_factory=_three_stage_optimizer)
        if code != 0:
            return code
        report = json.loads((out / "final_evaluation.json").read_text())
        judge_m = report["metrics"]["llm_judge"]
        final = report["final_bundle"]
        if backend == "gepa":
            runs = json.loads((out / "gepa_summary.json").read_text())["memory_system_runs"] + 1  # + the seed run
        else:
            runs = len(list(out.glob("iteration_*")))
        rows[backend] = {"before": judge_m["before"], "after": judge_m["after"], "memory_system_runs": runs,
                         "qa_prompt_changed": final.get("question_answering_prompt") is not None,
                         "wall_seconds": time.perf_counter() - started}
    print(f"{'backend':<9} {'held-out judge':>16} {'system runs':>12} {'QA prompt':>10} {'wall s':>7}")
    for name, r in rows.items():
        print(f"{name:<9} {r['before']:>7.4f} -> {r['after']:.4f} {r['memory_system_runs']:>12} "
              f"{'changed' if r['qa_prompt_changed'] else 'default':>10} {r['wall_seconds']:>7.0f}")
    (work / "results.json").write_text(json.dumps(rows, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
