"""Tracer workload run in a subprocess by ``benchmarks/tracer_overhead.py``.

The same file is run once with our ``smartcomment`` (``PYTHONPATH=<repo root>``) and once with
the reference smartcomment 0.1.2 (its own virtualenv, our repo kept off ``sys.path``). It uses
only the public smartcomment API so that both implementations execute identical code.

It records a synthetic Mem0-style memory-construction pipeline (spec §4.6 conventions):
per message a ``message`` node, a ``memory_system.extract_facts`` op scope (message + prompt ->
raw response -> cleaned response -> extracted facts), a ``memory_system.update_memory_decision``
op scope (``comment_op`` chain facts/existing memories/prompt -> task instruction -> raw
decision -> update action, an ADD ``comment_link`` to a ``memory-unit-<id>`` JSON node, every
5th message an UPDATE through ``comment_mutation(reuse_op=True)``, every 7th message a DELETE
marker), a session every 20 messages and a final finalization session.

Printed result: one line ``BENCH_RESULT {json}`` on stdout with every repeat's timings in seconds
(wall: ``time.perf_counter``; CPU: ``time.process_time``), the graph counts and a few size checks.
``--profile PATH --profile-step STEP`` instead writes a cProfile of one step (top entries to stderr).
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import statistics
import sys
import time

from smartcomment import (
    IdentityRegistry,
    comment_graph,
    comment_link,
    comment_mutation,
    comment_op,
    comment_op_scope,
    comment_session,
    comment_variable,
    disable_tracing,
    enable_tracing,
)
from smartcomment.runtime import ExecNetwork

MEM0_STRATEGY = "bench-mem0-dict"
MESSAGES_PER_SESSION = 20
XML_OPS = 200

FACT_PROMPT = (
    "You are a Personal Information Organizer, specialized in accurately storing facts, user "
    "memories, and preferences. Extract the relevant facts from the conversation below and "
    'return them as JSON: {"facts": [...]}.'
)
UPDATE_PROMPT = (
    "You are a smart memory manager which controls the memory of a system. Compare the newly "
    "retrieved facts with the existing memory and decide for each one: ADD, UPDATE, DELETE or NONE."
)
WORDS = (
    "support group hiking adoption painting camping pottery concert museum beach sunrise family "
    "career counseling transgender charity race school friends mentor guitar violin library park"
).split()


def _mem0_identity(value):
    if not isinstance(value, dict):
        raise TypeError("bench-mem0-dict expects a dict")
    return f"memory-unit-{value['id']}"


def _json_encode(value) -> str:
    return json.dumps(value, ensure_ascii=False, indent=4, sort_keys=True)


def make_dataset(n: int) -> list[dict]:
    """Deterministic LoCoMo-shaped messages with their (synthetic) extracted facts."""
    speakers = ("Caroline", "Melanie")
    data = []
    for i in range(n):
        session = i // MESSAGES_PER_SESSION + 1
        turn = i % MESSAGES_PER_SESSION + 1
        who = speakers[i % 2]
        w = [WORDS[(i * k + 3) % len(WORDS)] for k in (1, 3, 7, 11, 13)]
        content = (
            f"Hey! Yesterday I went to the {w[0]} with my {w[1]} and we talked about the "
            f"{w[2]} for hours. Next week: {w[3]} and maybe {w[4]} (message {i})."
        )
        timestamp = f"{1 + session % 28} May 2023, {8 + turn % 12}:{turn:02d} pm"
        msg = {
            "id": f"U1:D{session}:{turn}",
            "role": "user",
            "name": who,
            "content": content + f"\n[metadata: session {session}, turn {turn}]",
            "timestamp": timestamp,
        }
        # every 4th message yields no facts (shared, content-identified empty response nodes)
        facts = [] if i % 4 == 3 else [f"{who} went to the {w[0]} with {w[1]}", f"{who} plans {w[3]}"]
        data.append({"msg": msg, "facts": facts, "session": session})
    return data


# ---- "LLM" steps shared by the traced and the bare pipeline ----------------------------------


def raw_fact_response(facts: list[str]) -> str:
    return "```json\n" + json.dumps({"facts": facts}) + "\n```"


def strip_code_block(text: str) -> str:
    return text.removeprefix("```json\n").removesuffix("\n```")


def existing_memories(units: list[dict]) -> str:
    return json.dumps([{"id": u["id"], "text": u["memory"]} for u in units[-3:]], ensure_ascii=False)


def task_instruction(facts: str, existing: str) -> str:
    return f"{UPDATE_PROMPT}\n\nOld memory:\n{existing}\n\nRetrieved facts:\n{facts}"


def raw_decision(i: int, facts: list[str]) -> str:
    event = "UPDATE" if i % 5 == 4 else "ADD"
    return json.dumps({"memory": [{"id": str(i), "text": facts[0], "event": event}]})


def decision_action(raw: str) -> dict:
    return json.loads(raw)["memory"][0]


def new_unit(counter: int, memory: str, timestamp: str) -> dict:
    return {"id": f"00000000-0000-0000-0000-{counter:012d}", "memory": memory, "timestamp": timestamp}


# ---- traced pipeline --------------------------------------------------------------------------


def _message_node(msg: dict):
    mid = msg["id"]
    value = {k: msg[k] for k in ("content", "name", "role", "timestamp")}
    return comment_variable(
        value,
        to_runtime=True,
        id_strategy=lambda _v, _id=mid: _id,
        encoding_fn=_json_encode,
        category="message",
        metadata={"timestamp": msg["timestamp"], "speakers": ["Caroline", "Melanie"]},
    )


def _opts(class_name: str, category: str) -> dict:
    return {"class_name": class_name, "category": category}


def _unit_opts() -> dict:
    return {"id_strategy": MEM0_STRATEGY, "encoding_fn": _json_encode, "category": "memory_entry"}


def traced_pipeline(dataset: list[dict]):
    live: list[dict] = []
    counter = 0
    with comment_graph(
        user_id="locomo-bench",
        project_id="Mem0",
        strict=True,
        metadata={"layer_type": "Mem0", "dataset_cls": "LoCoMo"},
    ) as graph:
        for start in range(0, len(dataset), MESSAGES_PER_SESSION):
            chunk = dataset[start : start + MESSAGES_PER_SESSION]
            sid = f"locomo-bench-session-{chunk[0]['session']}"
            with comment_session(
                session_id=sid,
                category="memory_construction",
                metadata={"session_summary": f"session {chunk[0]['session']}"},
            ):
                for i, item in enumerate(chunk, start):
                    msg, facts = item["msg"], item["facts"]
                    msg_rv = _message_node(msg)
                    raw = raw_fact_response(facts)
                    cleaned = strip_code_block(raw)
                    facts_text = "\n".join(facts)
                    with comment_op_scope(
                        op_name="memory_system.extract_facts",
                        category="extraction",
                        comment="Extract facts from the new message.",
                    ):
                        raw_rv = comment_variable(
                            raw,
                            to_runtime=True,
                            class_name="raw_fact_extraction_response",
                            category="llm_response",
                        )
                        comment_link(source=msg_rv, target=raw_rv)
                        comment_link(
                            source=(
                                FACT_PROMPT,
                                {
                                    "id_strategy": lambda _v: "fact-extraction-system-prompt",
                                    "category": "prompt",
                                },
                            ),
                            target=raw_rv,
                        )
                        comment_link(
                            source=raw_rv,
                            target=(
                                cleaned,
                                _opts("fact_extraction_response_with_code_block_removing", "llm_response"),
                            ),
                        )
                        facts_rv = comment_variable(
                            facts_text, to_runtime=True, class_name="extracted_facts", category="llm_response"
                        )
                        comment_link(
                            source=(
                                cleaned,
                                _opts("fact_extraction_response_with_code_block_removing", "llm_response"),
                            ),
                            target=facts_rv,
                        )
                    if not facts:
                        continue
                    with comment_op_scope(
                        op_name="memory_system.update_memory_decision",
                        category="update",
                        metadata={"llm_model": "bench-llm"},
                    ):
                        existing = existing_memories(live)
                        instruction = task_instruction(facts_text, existing)
                        comment_op(
                            inputs=[
                                facts_rv,
                                (existing, _opts("existing_memories", "similar_memories")),
                                (
                                    UPDATE_PROMPT,
                                    {
                                        "id_strategy": lambda _v: "memory-update-decision-prompt",
                                        "category": "prompt",
                                    },
                                ),
                            ],
                            outputs=[(instruction, _opts("memory_update_task_instruction", "prompt"))],
                            category="update",
                        )
                        raw_dec = raw_decision(i, facts)
                        comment_op(
                            inputs=[(instruction, _opts("memory_update_task_instruction", "prompt"))],
                            outputs=[(raw_dec, _opts("raw_memory_update_decision", "llm_response"))],
                            category="update",
                        )
                        action = decision_action(raw_dec)
                        action_rv = comment_variable(
                            action, to_runtime=True, class_name="update_action", category="llm_response"
                        )
                        comment_op(
                            inputs=[(raw_dec, _opts("raw_memory_update_decision", "llm_response"))],
                            outputs=[action_rv],
                            reuse_op=True,
                            category="update",
                        )
                        if action["event"] == "UPDATE" and live:
                            unit = live[(i * 7) % len(live)]
                            with comment_mutation(
                                target=unit,
                                inputs=[action_rv],
                                id_strategy=MEM0_STRATEGY,
                                encoding_fn=_json_encode,
                                category="memory_entry",
                                mutation_category="llm_response",
                                reuse_op=True,
                            ):
                                unit["memory"] = f"{unit['memory']}; {action['text']}"
                                unit["timestamp"] = msg["timestamp"]
                        else:
                            counter += 1
                            unit = new_unit(counter, action["text"], msg["timestamp"])
                            live.append(unit)
                            comment_link(source=action_rv, target=(unit, _unit_opts()))
                        if i % 7 == 6 and len(live) > 1:
                            gone = live.pop(0)
                            comment_link(
                                source=(gone, _unit_opts()),
                                target=("DELETE", _opts("delete_marker", "marker")),
                            )
        with comment_session(category="memory_construction"):
            pass
    return graph


def bare_pipeline(dataset: list[dict]):
    """The same pipeline with no tracing calls at all (baseline for disabled tracing)."""
    live: list[dict] = []
    counter = 0
    sink = []
    for start in range(0, len(dataset), MESSAGES_PER_SESSION):
        chunk = dataset[start : start + MESSAGES_PER_SESSION]
        for i, item in enumerate(chunk, start):
            msg, facts = item["msg"], item["facts"]
            value = {k: msg[k] for k in ("content", "name", "role", "timestamp")}
            raw = raw_fact_response(facts)
            cleaned = strip_code_block(raw)
            facts_text = "\n".join(facts)
            sink.append((value, cleaned))
            if not facts:
                continue
            existing = existing_memories(live)
            instruction = task_instruction(facts_text, existing)
            raw_dec = raw_decision(i, facts)
            action = decision_action(raw_dec)
            sink.append((instruction, action))
            if action["event"] == "UPDATE" and live:
                unit = live[(i * 7) % len(live)]
                unit["memory"] = f"{unit['memory']}; {action['text']}"
                unit["timestamp"] = msg["timestamp"]
            else:
                counter += 1
                unit = new_unit(counter, action["text"], msg["timestamp"])
                live.append(unit)
            if i % 7 == 6 and len(live) > 1:
                live.pop(0)
    return sink


# ---- measurement ------------------------------------------------------------------------------


def _timed(fn, *args):
    """Run ``fn(*args)``; return (wall seconds, process CPU seconds, result)."""
    gc.collect()
    c0 = time.process_time()
    t0 = time.perf_counter()
    out = fn(*args)
    t1 = time.perf_counter()
    return t1 - t0, time.process_time() - c0, out


def _pick_ops(graph) -> list[str]:
    ops = graph.get_all_operations()
    step = max(1, len(ops) // XML_OPS)
    return [op.op_id for op in ops[::step][:XML_OPS]]


def _xml(graph, op_ids):
    return graph.filter_by_operation(op_ids).to_xml()


def _dumps(exported: dict) -> str:
    return json.dumps(exported, indent=4, ensure_ascii=False)


def _counts(graph) -> dict:
    return {
        "nodes": graph.node_count,
        "edges": graph.edge_count,
        "ops": graph.op_count,
        "sessions": graph.session_count,
    }


STEPS = ("record", "export", "json_dumps", "import", "xml_200_ops", "disabled", "baseline")


def _warm_up() -> None:
    """Pay one-off costs (lazy imports, pydantic schema builds) before anything is timed."""
    graph = traced_pipeline(make_dataset(40))
    ExecNetwork.import_graph(graph.export_graph())
    _xml(graph, _pick_ops(graph))
    disable_tracing()
    try:
        traced_pipeline(make_dataset(40))
    finally:
        enable_tracing()


def run(n: int, repeat: int) -> dict:
    import smartcomment

    IdentityRegistry.register(MEM0_STRATEGY, _mem0_identity, exist_ok=True)
    _warm_up()
    times: dict[str, list[float]] = {k: [] for k in STEPS}
    cpu: dict[str, list[float]] = {k: [] for k in STEPS}
    result: dict = {}

    def timed(key, fn, *args):
        wall, proc, out = _timed(fn, *args)
        times[key].append(wall)
        cpu[key].append(proc)
        return out

    for _ in range(repeat):
        graph = timed("record", traced_pipeline, make_dataset(n))
        exported = timed("export", graph.export_graph)
        text = timed("json_dumps", _dumps, exported)
        imported = timed("import", ExecNetwork.import_graph, exported)
        op_ids = _pick_ops(graph)
        xml = timed("xml_200_ops", _xml, graph, op_ids)
        disable_tracing()
        try:
            none_graph = timed("disabled", traced_pipeline, make_dataset(n))
        finally:
            enable_tracing()
        assert none_graph is None, "disabled tracing still produced a graph"
        timed("baseline", bare_pipeline, make_dataset(n))

        result = {
            "counts": _counts(graph),
            "imported_counts": _counts(imported),
            "checks": {
                "json_chars": len(text),
                "xml_chars": len(xml),
                "xml_ops": len(op_ids),
                "roundtrip_equal": imported.export_graph() == exported,
            },
        }
        del graph, exported, text, imported, xml
    result.update(
        {
            "module_file": smartcomment.__file__,
            "python": sys.version.split()[0],
            "messages": n,
            "repeat": repeat,
            "times": times,
            "cpu_times": cpu,
            "best": {k: min(v) for k, v in times.items()},
            "median": {k: statistics.median(v) for k, v in times.items()},
        }
    )
    return result


def profile(n: int, path: str, step: str) -> None:
    """cProfile one step (record, export, import, xml, disabled) and print the top entries to stderr."""
    import cProfile
    import pstats

    IdentityRegistry.register(MEM0_STRATEGY, _mem0_identity, exist_ok=True)
    _warm_up()
    dataset = make_dataset(n)
    prof = cProfile.Profile()
    if step == "disabled":
        disable_tracing()
        prof.runcall(traced_pipeline, dataset)
        enable_tracing()
    elif step == "record":
        prof.runcall(traced_pipeline, dataset)
    else:
        graph = traced_pipeline(dataset)
        gc.collect()
        if step == "export":
            prof.runcall(graph.export_graph)
        elif step == "import":
            exported = graph.export_graph()
            gc.collect()
            prof.runcall(ExecNetwork.import_graph, exported)
        elif step == "xml":
            prof.runcall(_xml, graph, _pick_ops(graph))
        else:
            raise SystemExit(f"unknown profile step {step!r}")
    prof.dump_stats(path)
    stats = pstats.Stats(prof, stream=sys.stderr).sort_stats("tottime")
    stats.print_stats(20)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--messages", type=int, default=2000)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--profile", metavar="PATH", help="write a cProfile of one step instead of timing")
    ap.add_argument(
        "--profile-step", default="record", choices=("record", "export", "import", "xml", "disabled")
    )
    args = ap.parse_args()
    if args.profile:
        profile(args.messages, args.profile, args.profile_step)
        return
    res = run(args.messages, args.repeat)
    res["pid"] = os.getpid()
    print("BENCH_RESULT " + json.dumps(res), flush=True)


if __name__ == "__main__":
    main()
