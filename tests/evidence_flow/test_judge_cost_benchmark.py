"""benchmarks/evidence_flow_judge_cost.py's counting: offline tiktoken, whole requests, the scripted judge."""

from __future__ import annotations

import json

import pytest

from benchmarks.evidence_flow_judge_cost import judge_oracle, request_tokens, token_counter
from toolkits.evidence_flow.judges.prompts import presence_question


def test_tiktoken_counts_offline_from_the_shipped_encoding(tmp_path):
    pytest.importorskip("tiktoken")
    pytest.importorskip("bpe_openai")
    name, count = token_counter(tmp_path)
    assert name == "tiktoken o200k_base"  # not a fallback: the network is blocked in tests
    assert count("hello world") == 2


def test_a_request_counts_its_text_tool_calls_schemas_and_framing():
    def count(text: str) -> int:
        return len(text.split())

    messages = [{"role": "user", "content": "find the op"},
                {"role": "assistant", "content": None,
                 "tool_calls": [{"function": {"name": "view_node_value", "arguments": '{"full_node_id": "m@1"}'}}]},
                {"role": "tool", "content": [{"type": "text", "text": "value of m"}]}]
    tools = [{"type": "function", "function": {"name": "view_node_value"}}]
    bare = request_tokens(messages, (), count)
    assert bare == 3 * 3 + 3 + (1 + 2) + 3  # framing, texts, the call's name and arguments
    assert request_tokens(messages, tools, count) == bare + count(json.dumps(tools[0]))


def test_the_scripted_judge_says_yes_where_the_answer_words_are():
    prompt = presence_question("Nadia: I adopted a rabbit called Pip.", "Pip",
                               ["Nadia has a bunny named Pip.", "Nadia likes tea."])
    reply = judge_oracle([{"role": "system", "content": "..."}, {"role": "user", "content": prompt}])
    assert json.loads(reply) == {"v": ["yes", "no"]}
