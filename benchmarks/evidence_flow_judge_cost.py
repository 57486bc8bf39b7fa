"""Tokens per case of evidence_flow's ``llm`` judge next to ``graph_search``'s, on the same cases, offline.

Both strategies run through ``run_error_attribution.main`` on a MemTraceBench folder with scripted
models, and every prompt and completion their models receive and return is counted with the
``o200k_base`` BPE (``tiktoken`` when its encoding file is cached, else ``bpe-openai``, which ships
the same file; the membase regex estimate only when neither is installed — the table says which):

* ``evidence_flow --evidence-flow-judge llm``: the judge's model answers "yes" for a text holding
  the golden answer's words, else "no" (the verdicts decide how many texts are asked; the cost of a
  question does not depend on its answer);
* ``graph_search``: the agent's model submits the gold attribution on its **first** call, so the
  count is graph_search's cheapest possible run — one system prompt, the starting frontier and the
  tool schemas' names — a lower bound: a real agent reads further and resends the growing
  conversation on every turn.

Run::

    python benchmarks/evidence_flow_judge_cost.py examples/faultbench
    python benchmarks/evidence_flow_judge_cost.py /tmp/evidence_flow_suite/b/bench --splits mem0
"""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import re
import statistics
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

SPLITS = ("long_context", "rag", "mem0", "evermemos")


def token_counter() -> tuple[str, Callable[[str], int]]:
    """``(name, count)`` of the best offline o200k_base counter installed."""
    try:
        import tiktoken

        encoding = tiktoken.get_encoding("o200k_base")
        return "tiktoken o200k_base", lambda text: len(encoding.encode(text, disallowed_special=()))
    except Exception:  # noqa: BLE001 - no cached encoding file offline: try the next counter
        pass
    try:
        import bpe_openai

        encoding = bpe_openai.get_encoding("o200k_base")
        return "bpe-openai o200k_base", lambda text: len(encoding.encode(text))
    except Exception:  # noqa: BLE001
        from membase.utils.tokens import count_tokens

        return "membase regex estimate", count_tokens


def _words(text: str) -> set[str]:
    from toolkits.evidence_flow import content_tokens

    return set(content_tokens(text))


def _judge_oracle(messages: list[dict[str, Any]], **_: Any) -> str:
    prompt = messages[-1]["content"]
    answer = _words(re.search(r"<answer>(.*?)</answer>", prompt, re.DOTALL).group(1))
    texts = re.findall(r'<text id="(\d+)">(.*?)</text>', prompt, re.DOTALL)
    verdicts = [{"id": int(i), "verdict": "yes" if answer <= _words(t) else "no"} for i, t in texts]
    return json.dumps({"verdicts": verdicts})


def _gold(path: Path) -> dict[str, tuple[str, str]]:
    data = json.loads(path.read_text(encoding="utf-8"))
    return {a["query_id"]: (a["final_error_type"], a["final_op_id"]) for a in data["data"]["annotations"]}


def _run(bench: Path, split: str, out: Path, extra: Sequence[str], model_factory: Any = None) -> dict[str, Any]:
    import run_error_attribution

    args = [str(bench), split, "--output-path", str(out), "--no-progress", "--bootstrap-samples", "0", "--no-resume",
            "--batch-size", "1", *extra]
    with contextlib.redirect_stdout(io.StringIO()):
        code = run_error_attribution.main(args, model_factory=model_factory)
    if code != 0:
        raise SystemExit(f"error: run_error_attribution exited {code} on {bench}/{split}")
    return json.loads(out.read_text(encoding="utf-8"))


def judge_tokens(bench: Path, split: str, out_dir: Path, count: Callable[[str], int]) -> list[tuple[int, int, int]]:
    """``(prompt, completion, calls)`` per case of the llm judge (cases run one at a time, so the
    model's calls split into cases by the call counts each result records)."""
    from membase.clients.fake import FunctionChatModel
    from toolkits import _builtin_strategies
    from toolkits.evidence_flow.judges import LLMJudgeFactory

    replies: list[str] = []

    def reply(messages: list[dict[str, Any]], **kw: Any) -> str:
        replies.append(_judge_oracle(messages, **kw))
        return replies[-1]

    model = FunctionChatModel(reply, model="judge-oracle")
    original = _builtin_strategies._llm_judge
    _builtin_strategies._llm_judge = lambda ctx: LLMJudgeFactory(model=model)
    try:
        data = _run(bench, split, out_dir / "judge.json",
                    ["--exploration-strategy", "evidence_flow", "--evidence-flow-judge", "llm"])
    finally:
        _builtin_strategies._llm_judge = original
    per_case: list[tuple[int, int, int]] = []
    at = 0
    for record in data["results"]:
        calls = (record.get("evidence_flow") or {}).get("judge", {}).get("calls", 0)
        mine = range(at, at + calls)
        at += calls
        prompt = sum(count(m["content"]) for i in mine for m in model.calls[i]["messages"])
        per_case.append((prompt, sum(count(replies[i]) for i in mine), calls))
    return per_case


def graph_search_tokens(bench: Path, split: str, out_dir: Path, count: Callable[[str], int]) -> list[tuple[int, int, int]]:
    """``(prompt, completion, calls)`` per case of a one-call graph_search."""
    from graphtrace import answer
    from membase.clients import ScriptedChatModel

    per_case: list[tuple[int, int, int]] = []
    for graph_file in sorted((bench / split).glob("*.json")):
        gold = _gold(graph_file)
        models: list[Any] = []

        def factory(ctx: Any, gold: dict[str, tuple[str, str]] = gold, models: list[Any] = models) -> Any:
            error_type, op_id = gold[ctx.case.query_full_node_id]
            model = ScriptedChatModel([answer(error_type, op_id, "The evidence is lost at this operation.")])
            models.append(model)
            return model

        sub = out_dir / "one" / split
        sub.mkdir(parents=True, exist_ok=True)
        (sub / graph_file.name).write_bytes(graph_file.read_bytes())
        try:
            _run(out_dir / "one", split, out_dir / "gs.json",
                 ["--exploration-strategy", "graph_search", "--max-iters", "3", "--api-config-path",
                  str(out_dir / "api.json")], model_factory=factory)
        finally:
            (sub / graph_file.name).unlink()
        for model in models:
            prompt = sum(count(json.dumps(m.get("content"), ensure_ascii=False)) for c in model.calls for m in c.messages)
            # the one completion is the scripted answer call
            completion = count(json.dumps({"error_type": "ExtractionError", "op_id": "op-" + "0" * 32,
                                           "reason": "The evidence is lost at this operation."}))
            per_case.append((prompt, completion, len(model.calls)))
    return per_case


def _row(name: str, values: list[tuple[int, int, int]]) -> str:
    prompts = [v[0] for v in values]
    completions = [v[1] for v in values]
    calls = [v[2] for v in values]
    return (f"| {name} | {len(values)} | {statistics.mean(calls):.1f} | {statistics.mean(prompts):,.0f} | "
            f"{statistics.median(prompts):,.0f} | {statistics.mean(completions):,.0f} |")


def main(argv: Sequence[str] | None = None) -> int:
    """Print the cost table; exit 0, or 2 on bad arguments."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("bench", type=Path, help="MemTraceBench folder (<split>/*.json)")
    parser.add_argument("--splits", nargs="+", choices=SPLITS, default=list(SPLITS))
    parser.add_argument("--work", type=Path, default=Path("/tmp/evidence_flow_judge_cost"))
    args = parser.parse_args(argv)
    if not args.bench.is_dir():
        print(f"error: {args.bench} is not a folder", file=sys.stderr)
        return 2
    args.work.mkdir(parents=True, exist_ok=True)
    (args.work / "api.json").write_text(json.dumps({"api_keys": ["EMPTY"], "base_urls": ["http://127.0.0.1:9/v1"]}))
    name, count = token_counter()
    judge: list[tuple[int, int, int]] = []
    search: list[tuple[int, int, int]] = []
    for split in args.splits:
        if (args.bench / split).is_dir():
            judge += judge_tokens(args.bench, split, args.work, count)
            search += graph_search_tokens(args.bench, split, args.work, count)
    print(f"tokens counted with {name}; bench {args.bench}")
    print("| strategy | cases | calls / case | prompt tokens / case (mean) | (median) | completion tokens / case |")
    print("|---|---|---|---|---|---|")
    print(_row("evidence_flow, llm judge", judge))
    print(_row("graph_search, one call (lower bound)", search))
    share = sum(v[0] + v[1] for v in judge) / max(1, sum(v[0] + v[1] for v in search))
    print(f"llm judge / one-call graph_search tokens: {share:.1%}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
