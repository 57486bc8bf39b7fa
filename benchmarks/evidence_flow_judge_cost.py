"""Tokens per case of evidence_flow's ``llm`` judge next to ``graph_search``'s, on the same cases, offline.

Both strategies run through ``toolkits.attribution.cli.main`` on a MemTraceBench folder with scripted
models, and every request they send is counted with the ``o200k_base`` BPE — ``tiktoken``, fed the
encoding file that ``bpe-openai`` ships (checked against tiktoken's own hash, so nothing is
downloaded); ``bpe-openai`` itself, or the membase regex estimate, only when tiktoken is missing
(the output says which). A request counts its messages' text, the arguments of the tool calls they
carry, the tool schemas sent with it, and 3 tokens per message of chat framing:

* ``evidence_flow --evidence-flow-judge llm``: the judge's model answers "yes" for a text holding
  the golden answer's words, else "no" (the cost of a question does not depend on its answer). The
  same runs give its accuracy (ETA / OIA), next to the ``rules`` judge's;
* ``graph_search``, **path reader**: the agent reads what it must to check the verdict and nothing
  more — it explores its first frontier node, views the value of every node on the information's
  path (the nodes ``evidence_flow``'s trail visits, up to the blamed op), then submits the gold
  attribution. Every call resends the growing conversation, as a real agent's does; a real agent
  also wanders, so this is still below what it spends;
* ``graph_search``, **one call**: the agent submits on its first call (system prompt, task and tool
  schemas only) — the cheapest run possible, a floor no real run reaches.

Run::

    python benchmarks/evidence_flow_judge_cost.py examples/faultbench
    python benchmarks/evidence_flow_judge_cost.py /tmp/evidence_flow_suite/b/bench --splits mem0
"""

from __future__ import annotations

import argparse
import contextlib
import gzip
import hashlib
import io
import json
import os
import statistics
import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]

SPLITS = ("long_context", "rag", "mem0", "evermemos")
#: tiktoken's source and hash of the o200k_base file (``tiktoken_ext/openai_public.py``).
_O200K_URL = "https://openaipublic.blob.core.windows.net/encodings/o200k_base.tiktoken"
_O200K_SHA256 = "446a9538cb6c348e3516120d7c08b09f57c36495e2acfffe59a5bf8b0cfb1a2d"
#: Chat framing per message (role and separators), as OpenAI's token-counting guide states it.
MESSAGE_OVERHEAD = 3
#: The most node values the path reader views (a real agent's context budget caps it too).
MAX_PATH_NODES = 12
_REASON = "The information is lost at this operation."


def _seed_tiktoken_cache(work: Path) -> None:
    """Put bpe-openai's o200k_base file where tiktoken looks for its download (hash-checked)."""
    import bpe_openai

    packed = Path(bpe_openai.__file__).parent / "data" / "o200k_base.tiktoken.gz"
    data = gzip.decompress(packed.read_bytes())
    if hashlib.sha256(data).hexdigest() != _O200K_SHA256:
        raise ValueError("bpe-openai's o200k_base file differs from tiktoken's")
    cache = work / "tiktoken"
    cache.mkdir(parents=True, exist_ok=True)
    (cache / hashlib.sha1(_O200K_URL.encode()).hexdigest()).write_bytes(data)
    os.environ["TIKTOKEN_CACHE_DIR"] = str(cache)


def token_counter(work: Path) -> tuple[str, Callable[[str], int]]:
    """``(name, count)`` of the best offline o200k_base counter installed."""
    try:
        import tiktoken

        with contextlib.suppress(Exception):  # no bpe-openai: tiktoken may still have its own cache
            _seed_tiktoken_cache(work)
        encoding = tiktoken.get_encoding("o200k_base")
        return "tiktoken o200k_base", lambda text: len(encoding.encode(text, disallowed_special=()))
    except Exception:  # noqa: BLE001 - no encoding file offline: try the next counter
        pass
    try:
        import bpe_openai

        encoding = bpe_openai.get_encoding("o200k_base")
        return "bpe-openai o200k_base", lambda text: len(encoding.encode(text))
    except Exception:  # noqa: BLE001
        from membase.utils.tokens import count_tokens

        return "membase regex estimate", count_tokens


def _content(message: dict[str, Any]) -> str:
    content = message.get("content")
    if isinstance(content, list):
        return "\n".join(str(part.get("text", "")) for part in content if isinstance(part, dict))
    return "" if content is None else str(content)


def request_tokens(messages: Sequence[dict[str, Any]], tools: Sequence[Any], count: Callable[[str], int]) -> int:
    """Prompt tokens of one chat request: each message's text and tool-call arguments plus its framing,
    and the tool schemas sent with it (counted as their JSON)."""
    total = 0
    for message in messages:
        total += MESSAGE_OVERHEAD + count(_content(message))
        for call in message.get("tool_calls") or []:
            function = call.get("function") or {}
            total += count(str(function.get("name", ""))) + count(str(function.get("arguments", "")))
    return total + sum(count(json.dumps(tool, ensure_ascii=False)) for tool in tools)


def _messages(call: Any) -> list[dict[str, Any]]:
    """The messages of one recorded fake-model call (a dict or a ``ModelCall``)."""
    return call["messages"] if isinstance(call, dict) else call.messages


def _words(text: str) -> set[str]:
    from toolkits.evidence_flow import content_tokens

    return set(content_tokens(text))


def judge_oracle(messages: list[dict[str, Any]], **_: Any) -> str:
    """The scripted judge model: "yes" for each asked text that holds the golden answer's words."""
    from toolkits.evidence_flow.judges.prompts import read_question

    answer, texts = read_question(messages[-1]["content"])
    wanted = _words(answer)
    return json.dumps({"v": ["yes" if wanted <= _words(text) else "no" for text in texts]})


def _gold(path: Path) -> dict[str, tuple[str, str]]:
    data = json.loads(path.read_text(encoding="utf-8"))
    return {a["query_id"]: (a["final_error_type"], a["final_op_id"]) for a in data["data"]["annotations"]}


def _run(bench: Path, split: str, out: Path, extra: Sequence[str], model_factory: Any = None) -> dict[str, Any]:
    from toolkits.attribution.cli import main as attribute

    args = [str(bench), split, "--output-path", str(out), "--no-progress", "--bootstrap-samples", "0", "--no-resume",
            "--batch-size", "1", "--api-config-path", str(out.parent / "api.json"), *extra]
    with contextlib.redirect_stdout(io.StringIO()):
        code = attribute(args, model_factory=model_factory)
    if code != 0:
        raise SystemExit(f"error: run_error_attribution exited {code} on {bench}/{split}")
    return json.loads(out.read_text(encoding="utf-8"))


@dataclass(frozen=True, kw_only=True)
class CaseCost:
    """What one case cost one strategy."""

    prompt: int
    completion: int
    calls: int
    type_right: bool = False
    op_right: bool = False


def _accuracy(record: dict[str, Any]) -> tuple[bool, bool]:
    return bool(record.get("is_error_type_correct")), bool(record.get("is_op_id_correct"))


def rules_accuracy(bench: Path, split: str, out_dir: Path) -> list[CaseCost]:
    """The ``rules`` judge's accuracy on the split (no tokens)."""
    data = _run(bench, split, out_dir / "rules.json", ["--exploration-strategy", "evidence_flow"])
    return [CaseCost(prompt=0, completion=0, calls=0, type_right=t, op_right=o)
            for t, o in map(_accuracy, data["results"])]


def judge_tokens(bench: Path, split: str, out_dir: Path, count: Callable[[str], int]) -> list[CaseCost]:
    """Cost and accuracy per case of the llm judge (cases run one at a time, so the model's calls
    split into cases by the call counts each result records)."""
    from membase.clients.fake import FunctionChatModel
    from toolkits import _builtin_strategies
    from toolkits.evidence_flow.judges import LLMJudgeFactory

    replies: list[str] = []

    def reply(messages: list[dict[str, Any]], **kw: Any) -> str:
        replies.append(judge_oracle(messages, **kw))
        return replies[-1]

    model = FunctionChatModel(reply, model="judge-oracle")
    original = _builtin_strategies._llm_judge
    _builtin_strategies._llm_judge = lambda ctx: LLMJudgeFactory(model=model)
    try:
        data = _run(bench, split, out_dir / "judge.json",
                    ["--exploration-strategy", "evidence_flow", "--evidence-flow-judge", "llm"])
    finally:
        _builtin_strategies._llm_judge = original
    per_case: list[CaseCost] = []
    at = 0
    for record in data["results"]:
        calls = (record.get("evidence_flow") or {}).get("judge", {}).get("calls", 0)
        mine = range(at, at + calls)
        at += calls
        type_right, op_right = _accuracy(record)
        per_case.append(CaseCost(prompt=sum(request_tokens(_messages(model.calls[i]), (), count) for i in mine),
                                 completion=sum(count(replies[i]) for i in mine), calls=calls,
                                 type_right=type_right, op_right=op_right))
    return per_case


def path_nodes(ctx: Any, op_id: str) -> list[str]:
    """The nodes evidence_flow's trail visits for the case, up to the step at the blamed op."""
    from toolkits.evidence_flow import attribute_case_evidence_flow

    result = attribute_case_evidence_flow(ctx.graph, ctx.case, ctx.evidence_ids,
                                          evidence_is_pseudo=bool(ctx.evidence_is_pseudo))
    nodes: list[str] = []
    for step in result.get("trail") or []:
        node = step.get("node_id")
        if node and node not in nodes:
            nodes.append(node)
        if step.get("op_id") == op_id and nodes:
            break
    return nodes[:MAX_PATH_NODES]


def _scripted_agent(turns: list[Any]) -> Any:
    from membase.clients import ScriptedChatModel

    class _Recording(ScriptedChatModel):
        """Keeps the tool schemas each request carried (the scripted model records only their names)."""

        def __init__(self, script: list[Any]) -> None:
            super().__init__(script)
            self.script = list(script)
            self.schemas: list[list[Any]] = []

        async def _call_api(self, model_name: str, messages: list[Any], tools: list[dict] | None = None,
                            tool_choice: Any = None, **kwargs: Any) -> Any:
            self.schemas.append(list(tools or []))
            return await super()._call_api(model_name, messages, tools, tool_choice, **kwargs)

    return _Recording(turns)


def graph_search_tokens(bench: Path, split: str, out_dir: Path, count: Callable[[str], int], *,
                        read_path: bool) -> list[CaseCost]:
    """Cost per case of a scripted graph_search: the path reader, or one call (``read_path`` False)."""
    from graphtrace import answer
    from membase.clients import ToolCall

    per_case: list[CaseCost] = []
    for graph_file in sorted((bench / split).glob("*.json")):
        gold = _gold(graph_file)
        models: list[Any] = []

        def factory(ctx: Any, gold: dict[str, tuple[str, str]] = gold, models: list[Any] = models) -> Any:
            error_type, op_id = gold[ctx.case.query_full_node_id]
            reads: list[Any] = []
            if read_path:
                reads = [ToolCall(name="explore_graph_trace_node")]
                reads += [ToolCall(name="view_node_value", args={"full_node_id": node}) for node in path_nodes(ctx, op_id)]
            models.append(_scripted_agent([*reads, answer(error_type, op_id, _REASON)]))
            return models[-1]

        sub = out_dir / "one" / split
        sub.mkdir(parents=True, exist_ok=True)
        (sub / graph_file.name).write_bytes(graph_file.read_bytes())
        try:
            _run(out_dir / "one", split, out_dir / "gs.json",
                 ["--exploration-strategy", "graph_search", "--max-iters", str(MAX_PATH_NODES + 4)],
                 model_factory=factory)
        finally:
            (sub / graph_file.name).unlink()
        for model in models:
            prompt = sum(request_tokens(call.messages, tools, count)
                         for call, tools in zip(model.calls, model.schemas, strict=True))
            # the completions are the scripted tool calls (their arguments) and the answer
            completion = sum(count(turn.name) + count(json.dumps(turn.args)) for turn in model.script[:len(model.calls)])
            per_case.append(CaseCost(prompt=prompt, completion=completion, calls=len(model.calls)))
    return per_case


def _row(name: str, values: list[CaseCost], *, accuracy: bool = False) -> str:
    prompts = [v.prompt for v in values]
    right = (f"{statistics.mean(v.type_right for v in values):.3f} / {statistics.mean(v.op_right for v in values):.3f}"
             if accuracy else "—")
    return (f"| {name} | {len(values)} | {statistics.mean(v.calls for v in values):.1f} | "
            f"{statistics.mean(prompts):,.0f} | {statistics.median(prompts):,.0f} | "
            f"{statistics.mean(v.completion for v in values):,.0f} | {right} |")


def _total(values: list[CaseCost]) -> int:
    return sum(v.prompt + v.completion for v in values)


def main(argv: Sequence[str] | None = None) -> int:
    """Print the cost table; exit 0, or 2 on bad arguments."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("bench", type=Path, help="MemTraceBench folder (<split>/*.json)")
    parser.add_argument("--splits", nargs="+", choices=SPLITS, default=list(SPLITS))
    parser.add_argument("--work", type=Path, default=Path("/tmp/evidence_flow_judge_cost"),
                        help="scratch folder for the runs' outputs")
    args = parser.parse_args(argv)
    if not args.bench.is_dir():
        print(f"error: {args.bench} is not a folder", file=sys.stderr)
        return 2
    args.work.mkdir(parents=True, exist_ok=True)
    api = {"api_keys": ["EMPTY"], "base_urls": ["http://127.0.0.1:9/v1"]}  # never reached: every model is scripted
    (args.work / "api.json").write_text(json.dumps(api))
    (args.work / "one").mkdir(exist_ok=True)
    (args.work / "one" / "api.json").write_text(json.dumps(api))
    name, count = token_counter(args.work)
    rows: dict[str, list[CaseCost]] = {"rules": [], "judge": [], "path": [], "one": []}
    for split in args.splits:
        if (args.bench / split).is_dir():
            rows["rules"] += rules_accuracy(args.bench, split, args.work)
            rows["judge"] += judge_tokens(args.bench, split, args.work, count)
            rows["path"] += graph_search_tokens(args.bench, split, args.work, count, read_path=True)
            rows["one"] += graph_search_tokens(args.bench, split, args.work, count, read_path=False)
    if not rows["judge"]:
        print(f"error: {args.bench} holds none of the splits {', '.join(args.splits)}", file=sys.stderr)
        return 2
    print(f"tokens counted with {name}; bench {args.bench}")
    print("| strategy | cases | calls / case | prompt tokens / case (mean) | (median) | completion tokens / case "
          "| ETA / OIA |")
    print("|---|---|---|---|---|---|---|")
    print(_row("evidence_flow, rules judge", rows["rules"], accuracy=True))
    print(_row("evidence_flow, llm judge (scripted)", rows["judge"], accuracy=True))
    print(_row("graph_search, path reader (scripted)", rows["path"]))
    print(_row("graph_search, one call (floor)", rows["one"]))
    print(f"llm judge / path-reading graph_search tokens: {_total(rows['judge']) / max(1, _total(rows['path'])):.1%}")
    print(f"llm judge / one-call graph_search tokens: {_total(rows['judge']) / max(1, _total(rows['one'])):.1%}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
