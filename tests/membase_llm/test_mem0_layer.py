"""The Mem0 layer on the real mem0ai 1.0.5, driven by the deterministic fake, traced from outside."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

pytest.importorskip("mem0", reason="the Mem0 layer needs mem0ai 1.0.5 (pip install 'memtrace-llm[mem0]')")

from membase.clients.fake import FunctionChatModel  # noqa: E402
from membase.datasets.locomo import load_locomo  # noqa: E402
from membase.exceptions import (  # noqa: E402
    ModelRequestError,
    ModelRequestsBlockedError,
    ModelUnreachableError,
)
from membase.layers.mem0 import Mem0Config, Mem0Layer  # noqa: E402
from membase.layers.mem0_fake import Mem0FakeBrain, make_mem0_fake  # noqa: E402
from membase.types import Message  # noqa: E402
from smartcomment import comment_graph, comment_session, comment_variable, current_context  # noqa: E402


def _config(tmp_path: Path, **overrides) -> Mem0Config:
    fields = dict(
        user_id="locomo-1",
        save_dir=str(tmp_path / "locomo-1"),
        llm_provider="fake",
        llm_model="mem0-fake",
        embedder_provider="fake",
        embedding_model_dims=64,
    )
    fields.update(overrides)
    return Mem0Config(**fields)


@pytest.fixture
def layer(tmp_path):
    layer = Mem0Layer(_config(tmp_path))
    yield layer
    layer.cleanup()


def _ops_named(graph, name):
    return [op for op in graph.get_all_operations() if op.op_name == name]


def _edges_of(graph, op):
    return [e for e in graph.get_all_edges() if e.op_id == op.op_id]


@pytest.fixture(scope="module")
def locomo_pair(locomo_path):
    """LoCoMo sample 1, sessions 1 and 2 (35 messages), and its QA list."""
    trajectory, qas = load_locomo(locomo_path)[0]
    return trajectory, list(trajectory.sessions)[:2], qas


@pytest.fixture(scope="module")
def traced_run(tmp_path_factory, locomo_pair):
    """One traced construction + search over the LoCoMo pair, shared by the graph tests (read-only)."""
    trajectory, sessions, qas = locomo_pair
    layer = Mem0Layer(_config(tmp_path_factory.mktemp("mem0"), user_id=trajectory.id))
    with comment_graph(user_id=trajectory.id, project_id="Mem0", strict=True) as graph:
        for i, session in enumerate(sessions, start=1):
            with comment_session(
                session_id=session.id, category="memory_construction", comment=f"session {i}"
            ):
                for message in session.messages:
                    layer.add_message(message)
        with comment_session(category="memory_search"):
            ctx = current_context()
            qa = qas[0]
            comment_variable(
                qa.question,
                variable_name="query",
                id_strategy=lambda _: qa.id,
                class_name="query",
                category="message & query",
                metadata=qa.metadata,
            )
            entries = layer.retrieve(qa.question, k=5)
            ctx.remove_variable("query")
    yield layer, graph, sessions, entries
    layer.cleanup()


def test_every_message_gets_extraction_and_decision_ops(traced_run):
    layer, graph, sessions, _ = traced_run
    n_messages = sum(len(s.messages) for s in sessions)
    assert layer.failures == []
    assert len(_ops_named(graph, "memory_system.extract_facts")) == n_messages
    assert len(_ops_named(graph, "memory_system.update_memory_decision")) == n_messages
    assert {op.category for op in _ops_named(graph, "memory_system.extract_facts")} == {"extraction"}
    assert {op.category for op in _ops_named(graph, "memory_system.update_memory_decision")} == {"update"}


def test_extraction_op_chain(traced_run):
    _, graph, sessions, _ = traced_run
    message_ids = {m.id for s in sessions for m in s.messages}
    prompt = graph.get_latest_variable("fact-extraction-system-prompt")
    assert prompt.category == "prompt" and prompt.version == 1
    for op in _ops_named(graph, "memory_system.extract_facts"):
        edges = _edges_of(graph, op)
        by_target: dict[str, set[str]] = {}
        for e in edges:
            by_target.setdefault(e.target_full_node_id, set()).add(e.source_full_node_id)
        raw = next(t for t in by_target if t.startswith("raw_fact_extraction_response:"))
        sources = by_target[raw]
        assert "fact-extraction-system-prompt@1" in sources
        assert len([s for s in sources if s.rsplit("@", 1)[0] in message_ids]) == 1
        cleaned = next(
            t for t in by_target if t.startswith("fact_extraction_response_with_code_block_removing:")
        )
        facts = next(t for t in by_target if t.startswith("extracted_facts:"))
        assert by_target[cleaned] == {raw} and by_target[facts] == {cleaned}
        assert {e.category for e in edges} == {"extraction"}
        # the raw reply is fenced, the cleaned one is not (mem0's remove_code_blocks)
        assert graph.get_variable(raw).raw_value.startswith("'```json")
        assert not graph.get_variable(cleaned).raw_value.startswith("'```")


def _decision_op_of(graph, full_node_id):
    ops = {op.op_id: op for op in graph.get_all_operations()}
    return {ops[e.op_id].op_name for e in graph.get_all_edges() if e.target_full_node_id == full_node_id}


def test_add_update_delete_paths(traced_run):
    layer, graph, _, _ = traced_run
    units = [n for n in graph.get_all_nodes() if n.name.startswith("memory-unit-")]
    edges = graph.get_all_edges()
    ops = {op.op_id: op for op in graph.get_all_operations()}
    decision_ops = {op.op_id for op in _ops_named(graph, "memory_system.update_memory_decision")}

    # ADD: update_action -> memory-unit@1, edge category `update`, inside a decision op
    adds = [
        e
        for e in edges
        if e.source_full_node_id.startswith("update_action:")
        and e.target_full_node_id.endswith("@1")
        and e.target_full_node_id.startswith("memory-unit-")
    ]
    assert adds and all(e.category == "update" and e.op_id in decision_ops for e in adds)

    # UPDATE: memory-unit@k -> @k+1 and update_action -> @k+1 (`llm_response`), same decision op
    updated = [n for n in units if n.version > 1]
    assert updated, "the fake decision should update at least one memory"
    for node in updated:
        incoming = [e for e in edges if e.target_full_node_id == node.full_node_id]
        sources = {e.source_full_node_id for e in incoming}
        assert f"{node.full_name}@{node.version - 1}" in sources
        assert any(s.startswith("update_action:") for s in sources)
        assert {e.category for e in incoming} == {"llm_response"}
        assert len({e.op_id for e in incoming}) == 1 and incoming[0].op_id in decision_ops
        assert json.loads(node.raw_value)["id"] == node.name.removeprefix("memory-unit-")

    # DELETE: memory-unit -> delete_marker inside a decision op; the memory is gone from mem0
    deletes = [e for e in edges if e.target_full_node_id.startswith("delete_marker:")]
    assert deletes and all(ops[e.op_id].op_name == "memory_system.update_memory_decision" for e in deletes)
    stored = {m["id"] for m in layer.get_all()}
    for e in deletes:
        assert e.source_full_node_id.startswith("memory-unit-")
        assert e.source_full_node_id.rsplit("@", 1)[0].removeprefix("memory-unit-") not in stored

    # the latest version of every stored memory equals mem0's current text
    for mem in layer.get_all():
        latest = graph.get_latest_variable(f"memory-unit-{mem['id']}")
        assert json.loads(latest.raw_value)["memory"] == mem["memory"]


def test_decision_op_reads_facts_existing_memories_and_template(traced_run):
    _, graph, _, _ = traced_run
    template = graph.get_latest_variable("memory-update-decision-prompt")
    assert template.category == "prompt"
    for op in _ops_named(graph, "memory_system.update_memory_decision"):
        edges = _edges_of(graph, op)
        instr = [e for e in edges if e.target_full_node_id.startswith("memory_update_task_instruction:")]
        if not instr:  # no facts: extracted_facts -> empty update_action
            assert any(
                e.source_full_node_id.startswith("extracted_facts:")
                and e.target_full_node_id.startswith("update_action:")
                for e in edges
            )
            continue
        sources = {e.source_full_node_id.split(":", 1)[0] for e in instr}
        assert sources == {"extracted_facts", "existing_memories", "memory-update-decision-prompt@1"}
        chain = {
            (e.source_full_node_id.split(":", 1)[0], e.target_full_node_id.split(":", 1)[0]) for e in edges
        }
        assert ("memory_update_task_instruction", "raw_memory_update_decision") in chain
        assert ("raw_memory_update_decision", "memory_update_decision_with_code_block_removing") in chain
        assert ("memory_update_decision_with_code_block_removing", "update_action") in chain


def test_search_results_carry_resolvable_trace_ids(traced_run):
    _, graph, _, entries = traced_run
    assert entries
    search_ops = _ops_named(graph, "memory_system.search_vector_store")
    assert len(search_ops) == 1 and search_ops[0].category == "retrieval"
    targets = {e.target_full_node_id for e in _edges_of(graph, search_ops[0])}
    for entry in entries:
        node = graph.get_latest_variable(entry.metadata["trace_id"])
        assert node.full_node_id in targets  # the retrieval edge lands on the latest version
        assert json.loads(node.raw_value)["memory"] == entry.content
        assert entry.formatted_content.startswith(f"Memory: {entry.content}\nTime: ")
    sources = {e.source_full_node_id for e in _edges_of(graph, search_ops[0])}
    assert sources == {"query:locomo-qa-1-1@1", "parameter:top_k@1"}  # the search limit is an input too
    limit = graph.get_variable("parameter:top_k@1")
    assert limit.category == "parameter" and limit.metadata["layer_type"] == "Mem0"


def test_custom_prompts_come_from_the_config(tmp_path):
    layer = Mem0Layer(
        _config(
            tmp_path,
            custom_fact_extraction_prompt="Extract facts (custom).",
            custom_update_memory_prompt="Decide updates (custom).",
        )
    )
    try:
        msgs = [
            Message(id=f"U:{i}", name="Ann", content=text, timestamp="2023-05-08T13:56:00")
            for i, text in enumerate(
                ["I adopted a small grey cat last week.", "My small grey cat loves fish every day."]
            )
        ]
        with comment_graph(user_id="u", project_id="Mem0", strict=True) as graph:
            with comment_session(category="memory_construction"):
                for m in msgs:
                    layer.add_message(m)
        assert graph.get_latest_variable("fact-extraction-system-prompt").raw_value == repr(
            "Extract facts (custom)."
        )
        assert graph.get_latest_variable("memory-update-decision-prompt").raw_value == repr(
            "Decide updates (custom)."
        )
        calls = layer.chat_model.calls
        assert calls[0].messages[0] == {"role": "system", "content": "Extract facts (custom)."}
        assert calls[1].messages[0]["content"].startswith("Decide updates (custom).")
    finally:
        layer.cleanup()


def test_a_failing_message_is_recorded_and_the_run_continues(tmp_path):
    brain = Mem0FakeBrain()

    def flaky(messages, **kwargs):
        if "BOOM" in messages[-1]["content"] and messages[0]["role"] == "system":
            raise RuntimeError("model exploded")
        return brain(messages, **kwargs)

    layer = Mem0Layer(_config(tmp_path), chat_model=FunctionChatModel(flaky))
    try:
        msgs = [
            Message(
                id="U:1",
                name="Ann",
                content="BOOM goes the first message here.",
                timestamp="2023-05-08T13:56:00",
            ),
            Message(
                id="U:2",
                name="Ann",
                content="I started painting landscapes this spring.",
                timestamp="2023-05-08T13:57:00",
            ),
        ]
        with comment_graph(user_id="u", project_id="Mem0", strict=True) as graph:
            with comment_session(category="memory_construction"):
                for m in msgs:
                    layer.add_message(m)
        assert [f["message_id"] for f in layer.failures] == ["U:1"]
        assert "model exploded" in layer.failures[0]["error"]
        assert [m["memory"] for m in layer.get_all()] == ["Ann: I started painting landscapes this spring."]
        assert len(_ops_named(graph, "memory_system.extract_facts")) == 1
        layer.save_memory()
        assert (
            json.loads((Path(layer.config.save_dir) / "failures.json").read_text())[0]["message_id"] == "U:1"
        )
    finally:
        layer.cleanup()


def test_untraced_use_and_persistence(tmp_path):
    config = _config(tmp_path)
    layer = Mem0Layer(config)
    layer.add_message(
        Message(
            id="U:1",
            name="Ann",
            content="I moved from Sweden four years ago.",
            timestamp="2023-05-08T13:56:00",
        )
    )
    entries = layer.retrieve("Where did Ann move from?", k=3)
    assert entries[0].metadata["trace_id"] == f"memory-unit-{entries[0].metadata['id']}"
    assert entries[0].metadata["timestamp"] == "2023-05-08T13:56:00"
    layer.save_memory()
    layer.cleanup()
    reopened = Mem0Layer(config)
    try:
        assert reopened.load_memory() is True
        assert [e.content for e in reopened.retrieve("Sweden", k=1)] == [
            "Ann: I moved from Sweden four years ago."
        ]
        with pytest.raises(ValueError, match="belongs to user"):
            reopened.load_memory("someone-else")
    finally:
        reopened.cleanup()


def test_no_telemetry_and_no_home_directory(layer):
    import mem0.memory.setup as setup
    import mem0.memory.telemetry as telemetry

    assert telemetry.MEM0_TELEMETRY is False and telemetry.client_telemetry.posthog is None
    home = Path.home().resolve()
    assert not Path(setup.mem0_dir).resolve().is_relative_to(home) or os.environ["MEM0_DIR"] == setup.mem0_dir
    assert Path(setup.mem0_dir).resolve() == Path(os.environ["MEM0_DIR"]).resolve()
    assert (
        Path(layer.memory.config.history_db_path)
        .resolve()
        .is_relative_to(Path(layer.config.save_dir).resolve())
    )
    assert (Path(layer.config.save_dir) / "qdrant").is_dir()


# -- the fake on its own ---------------------------------------------------------------------------
def _decision_prompt(old, facts):
    from mem0.configs.prompts import get_update_memory_messages

    return [{"role": "user", "content": get_update_memory_messages(old, facts)}]


def test_fake_decides_add_update_delete_none():
    fake = make_mem0_fake()
    old = [
        {"id": "0", "text": "Ann: I love hiking in the mountains on weekends."},
        {"id": "1", "text": "Ann: I drink coffee every morning at home."},
        {"id": "2", "text": "Ann: I adopted a small grey cat."},
    ]
    facts = [
        "Ann: I love hiking in the mountains on weekends.",
        "Ann: I do not drink coffee every morning anymore.",
        "Ann: I adopted a small grey cat named Miso.",
        "Ann: My sister lives in Toronto.",
    ]
    reply = json.loads(fake.complete(_decision_prompt(old, facts)).text)["memory"]
    assert [(a["event"], a["id"]) for a in reply] == [
        ("NONE", "0"),
        ("DELETE", "1"),
        ("UPDATE", "2"),
        ("ADD", "new-3"),
    ]
    assert reply[2]["old_memory"] == old[2]["text"]


def test_fake_extracts_statements_with_speaker():
    fake = make_mem0_fake(max_facts=2)
    content = (
        "Hey! How are you? I went to a support group yesterday. It was a really powerful evening for me. Also fun."
        "\nBelow is this message's metadata:\nSpeaker Name: Caroline\nSpeaker Role: user\n"
    )
    reply = fake.complete(
        [{"role": "system", "content": "x"}, {"role": "user", "content": f"Input:\nuser: {content}\n"}]
    ).text
    assert reply.startswith("```json\n")
    facts = json.loads(reply.removeprefix("```json\n").removesuffix("\n```"))["facts"]
    assert facts == [
        "Caroline: I went to a support group yesterday.",
        "Caroline: It was a really powerful evening for me.",
    ]


@pytest.mark.slow
def test_fresh_process_keeps_mem0_out_of_home(tmp_path):
    """In a new interpreter with MEM0_DIR unset, building the layer uses the run-level
    `<save_dir>/../.mem0` (outside the user's folder, which a rerun deletes), never $HOME."""
    import subprocess
    import sys

    home = tmp_path / "home"
    home.mkdir()
    save_dir = tmp_path / "user"
    script = (
        "from membase.layers.mem0 import Mem0Config, Mem0Layer\n"
        f"layer = Mem0Layer(Mem0Config(user_id='u', save_dir={str(save_dir)!r}, llm_provider='fake',"
        " embedder_provider='fake', embedding_model_dims=16))\n"
        "import mem0.memory.setup as s, mem0.memory.telemetry as t\n"
        "print(s.mem0_dir, t.MEM0_TELEMETRY)\n"
        "layer.cleanup()\n"
    )
    env = {k: v for k, v in os.environ.items() if k not in ("MEM0_DIR", "MEM0_TELEMETRY")}
    env["HOME"] = str(home)
    out = subprocess.run(
        [sys.executable, "-c", script],
        cwd=Path(__file__).resolve().parents[2],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert out.returncode == 0, out.stderr
    mem0_dir, telemetry = out.stdout.split()
    assert Path(mem0_dir) == (tmp_path / ".mem0").resolve() and telemetry == "False"
    assert list(home.iterdir()) == []


def test_openai_compatible_endpoint_is_configured_without_requests(tmp_path):
    from membase.clients import ChatClient
    from membase.layers.mem0 import _build_chat_model

    config = _config(
        tmp_path,
        llm_provider="openai",
        llm_model="qwen3",
        llm_config={"base_url": "http://127.0.0.1:9/v1", "api_key": "sk-local", "max_tokens": 64},
    )
    client = _build_chat_model(config)
    assert isinstance(client, ChatClient) and client.model == "qwen3"
    assert client.credentials.credential_for(0).base_url == "http://127.0.0.1:9/v1"


# -- failures, fatal errors, construction clean-up, token usage --------------------------------------
_FATAL = [
    ModelUnreachableError("chat endpoint http://127.0.0.1:9/v1 unreachable"),
    ModelRequestsBlockedError("real chat requests are disabled"),
]
_TWO = [
    Message(id="U:1", name="Ann", content="I started painting landscapes this spring.", timestamp="2023-05-08T13:56:00"),
    Message(id="U:2", name="Ann", content="I moved from Sweden four years ago.", timestamp="2023-05-08T13:57:00"),
]


@pytest.mark.parametrize("exc", _FATAL, ids=lambda e: type(e).__name__)
def test_fatal_extraction_error_stops_at_the_first_message(tmp_path, exc):
    def dead(messages, **kwargs):
        raise exc

    model = FunctionChatModel(dead)
    layer = Mem0Layer(_config(tmp_path), chat_model=model)
    try:
        with pytest.raises(type(exc)):
            for m in _TWO:
                layer.add_message(m)
        assert len(model.calls) == 1 and layer.failures == []
    finally:
        layer.cleanup()


def test_fatal_error_swallowed_by_mem0_in_the_update_decision_is_raised(tmp_path):
    """mem0 logs and ignores a failing update-decision call; the layer re-raises it after `add`."""
    brain = Mem0FakeBrain()

    def decision_dead(messages, **kwargs):
        if messages[0]["role"] != "system":
            raise ModelUnreachableError("chat endpoint unreachable")
        return brain(messages, **kwargs)

    model = FunctionChatModel(decision_dead)
    layer = Mem0Layer(_config(tmp_path), chat_model=model)
    try:
        with pytest.raises(ModelUnreachableError):
            for m in _TWO:
                layer.add_message(m)
        assert len(model.calls) == 2 and layer.failures == []  # extraction + decision of message 1
        assert layer.memory.llm.fatal_error is None  # taken, not left for the next message
    finally:
        layer.cleanup()


def test_failure_entries_are_message_id_and_error(tmp_path):
    brain = Mem0FakeBrain()

    def flaky(messages, **kwargs):
        if "Sweden" in messages[-1]["content"] and messages[0]["role"] == "system":
            raise ModelRequestError("HTTP 400: bad request")
        return brain(messages, **kwargs)

    layer = Mem0Layer(_config(tmp_path), chat_model=FunctionChatModel(flaky))
    try:
        for m in _TWO:
            layer.add_message(m)
        assert layer.failures == [{"message_id": "U:2", "error": "(ModelRequestError) HTTP 400: bad request"}]
    finally:
        layer.cleanup()


def test_failed_memory_construction_closes_the_qdrant_client(tmp_path, monkeypatch):
    import mem0
    import qdrant_client

    closed = []

    class SpyClient(qdrant_client.QdrantClient):
        def close(self, *args, **kwargs):
            closed.append(self)
            return super().close(*args, **kwargs)

    def broken_memory(config):
        raise RuntimeError("mem0 could not start")

    monkeypatch.setattr(qdrant_client, "QdrantClient", SpyClient)
    monkeypatch.setattr(mem0, "Memory", broken_memory)
    with pytest.raises(RuntimeError, match="could not start"):
        Mem0Layer(_config(tmp_path))
    assert len(closed) == 1
    monkeypatch.undo()
    layer = Mem0Layer(_config(tmp_path))  # the folder lock was released
    layer.cleanup()


def test_token_usage_comes_from_the_chat_model(tmp_path):
    model = make_mem0_fake(model="mem0-fake")
    layer = Mem0Layer(_config(tmp_path), chat_model=model)
    try:
        assert not hasattr(layer, "_message_count")
        for m in _TWO:
            layer.add_message(m)
        usage = layer.token_usage()
        assert set(usage) == {"llm"}  # the fake embedder keeps no counters
        assert usage["llm"]["model"] == "mem0-fake"
        assert usage["llm"]["requests"] == len(model.calls) >= 2
        assert usage["llm"]["input_tokens"] > 0 and usage["llm"]["output_tokens"] > 0
    finally:
        layer.cleanup()


def test_editing_a_memory_that_does_not_exist_says_so(layer):
    # delete/update answer False for an unknown id (and touch nothing); update needs the new text
    layer.add_message(Message(id="m1", name="Ines", content="I keep bees on the roof of my building.",
                              timestamp="2024-05-01T09:00:00"))
    stored = layer.get_all()
    assert stored
    assert layer.delete("no-such-memory") is False and layer.update("no-such-memory", data="x") is False
    assert len(layer.get_all()) == len(stored)
    with pytest.raises(ValueError, match="Mem0Layer.update needs data="):
        layer.update(stored[0]["id"])
    assert layer.update(stored[0]["id"], data="Ines keeps two hives.") is True
    assert any(m["memory"] == "Ines keeps two hives." for m in layer.get_all())
    assert layer.delete(stored[0]["id"]) is True and len(layer.get_all()) == len(stored) - 1
