"""The model layer at the bottom of the project: every chat and embedding model comes from here.

* chat over OpenAI-compatible endpoints (:class:`ChatClient`) and embedders;
* credentials (:class:`CredentialPool`, and the stricter :class:`ApiPool` of the attribution
  runners);
* the agentscope adapter for the agents (:func:`build_openai_chat_model`,
  :class:`StructuredReply`, :data:`STRUCTURED_OUTPUT_TOOL`);
* one pair of deterministic fakes (:class:`ScriptedChatModel`, :class:`FunctionChatModel`) that
  serve both membase's synchronous ``complete`` and agentscope's model interface.

The agentscope names are loaded on first use, so ``import membase.clients`` stays light.
"""

from __future__ import annotations

from importlib import import_module
from typing import Any

from membase.clients.chat import ChatClient, ChatModel, ChatResult
from membase.clients.credentials import ApiPool, Credential, CredentialError, CredentialPool
from membase.clients.embeddings import Embedder, FakeEmbedder, MiniLMEmbedder, OpenAIEmbedder, build_embedder
from membase.clients.usage import Usage

_LAZY = {
    "FunctionChatModel": "fake",
    "ModelCall": "fake",
    "ScriptedChatModel": "fake",
    "ToolCall": "fake",
    "STRUCTURED_OUTPUT_TOOL": "agentscope_adapter",
    "FlatTextFormatter": "agentscope_adapter",
    "StructuredReply": "agentscope_adapter",
    "build_openai_chat_model": "agentscope_adapter",
}

__all__ = [
    "STRUCTURED_OUTPUT_TOOL",
    "ApiPool",
    "ChatClient",
    "ChatModel",
    "ChatResult",
    "Credential",
    "CredentialError",
    "CredentialPool",
    "Embedder",
    "FakeEmbedder",
    "FlatTextFormatter",
    "FunctionChatModel",
    "MiniLMEmbedder",
    "ModelCall",
    "OpenAIEmbedder",
    "ScriptedChatModel",
    "StructuredReply",
    "ToolCall",
    "Usage",
    "build_embedder",
    "build_openai_chat_model",
]


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'membase.clients' has no attribute {name!r}")
    return getattr(import_module(f"membase.clients.{module}"), name)
