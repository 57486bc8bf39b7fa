"""EverMemOS prompts as optimization targets: overrides reach the LLM and the trace; one loop round."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from membase.clients import STRUCTURED_OUTPUT_TOOL, FunctionChatModel, ToolCall
from membase.layers.evermemos.prompts import PROMPT_TEMPLATES
from toolkits.optimization import command as optimization_command

pytestmark = pytest.mark.integration

EXTRA = "\nWhen in doubt, keep dates exact."
OFFLINE = {"layer_type": "EverMemOS", "llm_config": {"provider": "fake"},
           "embedding_config": {"provider": "fake", "embedding_dims": 64}}


def test_overrides_reach_the_model_and_the_trace(tmp_path, locomo_file):
    from membase.clients.fake import FunctionChatModel as MembaseFake
    from membase.layers.evermemos import EverMemOSConfig, EverMemOSLayer
    from membase.layers.evermemos.fake import make_evermemos_fake
    from membase.runners._common import tracing_switch
    from smartcomment import comment_graph, comment_session
    from toolkits.optimization.records import decode_stored_text
    from toolkits.optimization.sampling import load_full_dataset

    name = "episode-extraction-prompt-template"
    override = PROMPT_TEMPLATES[name].default + EXTRA
    fake = make_evermemos_fake()
    sent: list[str] = []
    spy = MembaseFake(lambda messages, **kw: (sent.append(messages[-1]["content"]), fake.fn(messages, **kw))[1])
    layer = EverMemOSLayer(EverMemOSConfig(
        user_id="u", save_dir=str(tmp_path / "u"), llm_config={"provider": "fake"},
        embedding_config={"provider": "fake", "embedding_dims": 64}, prompt_overrides={name: override},
    ), chat_model=spy)
    traj, _ = load_full_dataset(locomo_file, max_sessions=1)[0]
    with tracing_switch(True), comment_graph(user_id="u", project_id="EverMemOS") as graph:
        with comment_session(category="memory_construction"):
            for message in traj.messages:
                layer.add_message(message)
            layer.flush()
    layer.cleanup()
    assert any(EXTRA.strip() in text for text in sent), "the episode prompt sent to the LLM uses the override"
    traced = decode_stored_text(graph.get_latest_variable(name).raw_value)
    assert traced == override
    assert PROMPT_TEMPLATES[name].template == PROMPT_TEMPLATES[name].default  # no leak outside the layer


def _factory(_call_index):
    def fn(messages, tools, _choice):
        content = messages[1]["content"]
        text = content if isinstance(content, str) else "".join(p.get("text", "") for p in content)
        if STRUCTURED_OUTPUT_TOOL not in tools:
            return "thinking"
        if not text.startswith("Rewrite"):
            return ToolCall(name=STRUCTURED_OUTPUT_TOOL, args={"rationale": "r", "feedback": "f", "aggregated_feedback": "f"})
        node = re.search(r'full_node_id="([^"@]+)@', text.split("## Feedback")[0]).group(1)
        value = PROMPT_TEMPLATES[node].default + EXTRA if node in PROMPT_TEMPLATES else "Answer $question from $context."
        return ToolCall(name=STRUCTURED_OUTPUT_TOOL, args={"rationale": "r", "improved_value": value})

    return FunctionChatModel(fn)


def test_one_evermemos_round_rewrites_its_traced_templates(tmp_path, locomo_file):
    config = tmp_path / "evermemos.json"
    config.write_text(json.dumps(OFFLINE))
    out = tmp_path / "run"
    argv = ["--config-path", str(config), "--dataset-path", str(locomo_file), "--optimization-dir", str(out),
            "--sample-size", "1", "--disable-memtrace", "--optimizer-model", "unused", "--qa-model", "fake:no idea",
            "--judge-model", 'fake:{"label": "WRONG"}', "--max-sessions", "1", "--max-questions", "1",
            "--eval-trajectories", "none", "--no-progress"]
    assert optimization_command.main(argv, optimizer_model_factory=_factory) == 0
    folder = out / "iteration_1"
    summary = json.loads((folder / "iteration_summary.json").read_text())
    updated = set(summary["updated_fields"])
    assert "prompt_overrides.boundary-detection-prompt-template" in updated
    assert "prompt_overrides.episode-extraction-prompt-template" in updated and "question_answering_prompt" in updated
    bundle = json.loads((folder / "memory_system_config.json").read_text())
    overrides = bundle["base_config"]["prompt_overrides"]
    assert overrides["episode-extraction-prompt-template"].endswith(EXTRA)
    exported = json.loads((folder / "memory_config.json").read_text())
    from membase.layers import build_layer_config

    assert build_layer_config(exported.pop("layer_type"), user_id="x", **exported).prompt_overrides == overrides
    assert Path(summary["graph_path"]).is_file()


@pytest.mark.parametrize("multi_query", [True, False])
def test_every_evermemos_template_target_names_a_variable_of_the_traced_graph(tmp_path, multi_query):
    """Targets are matched by full name; the retrieval templates carry a class prefix in the graph."""
    from membase.layers.evermemos import EverMemOSConfig, EverMemOSLayer
    from membase.layers.evermemos.fake import make_evermemos_fake
    from membase.runners._common import tracing_switch
    from membase.types import Message
    from smartcomment import comment_graph, comment_session, comment_variable, current_context
    from toolkits.optimization.targets import TARGETS

    layer = EverMemOSLayer(EverMemOSConfig(
        user_id="u", save_dir=str(tmp_path / "u"), llm_config={"provider": "fake"},
        embedding_config={"provider": "fake", "embedding_dims": 64},
        retrieval_config={"retrieval_mode": "agentic", "use_multi_query": multi_query},
        extraction_config={"enable_event_log": True, "enable_foresight": True},
    ), chat_model=make_evermemos_fake(sufficiency="never"))
    talk = [("Caroline", "I went to a support group yesterday.", "2023-05-08T13:56:00"),
            ("Melanie", "I painted a lake sunrise last year.", "2023-05-25T13:14:00")]
    with tracing_switch(True), comment_graph(user_id="u", project_id="EverMemOS") as graph:
        with comment_session(category="memory_construction"):
            for i, (name, text, ts) in enumerate(talk, 1):
                layer.add_message(Message(id=f"U1:D{i}", name=name, content=text, timestamp=ts))
            layer.flush()
        with comment_session(category="memory_search"):
            comment_variable("What did Caroline paint?", variable_name="query", id_strategy=lambda _: "qa-1",
                             class_name="query", category="message & query", metadata={"evidence": []})
            layer.retrieve("What did Caroline paint?", k=2)
            current_context().remove_variable("query")
    layer.cleanup()
    round2 = "multi-query-generation-prompt-template" if multi_query else "refined-query-prompt-template"
    unused = {"refined-query-prompt-template", "multi-query-generation-prompt-template"} - {round2}
    for target in TARGETS.for_layer("EverMemOS", kinds=("prompt",)):
        if target.field.removeprefix("prompt_overrides.") in unused or target.field == "question_answering_prompt":
            continue
        assert graph.get_versions(target.variable), f"{target.field}: no graph variable {target.variable!r}"
