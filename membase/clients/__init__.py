"""Model clients: chat over OpenAI-compatible endpoints, embedders, deterministic fakes."""

from membase.clients.chat import ChatClient, ChatModel, ChatResult
from membase.clients.credentials import Credential, CredentialPool
from membase.clients.embeddings import Embedder, FakeEmbedder, MiniLMEmbedder, OpenAIEmbedder, build_embedder
from membase.clients.fake import FunctionChatModel, ScriptedChatModel
from membase.clients.usage import Usage

__all__ = [
    "ChatClient",
    "ChatModel",
    "ChatResult",
    "Credential",
    "CredentialPool",
    "Embedder",
    "FakeEmbedder",
    "FunctionChatModel",
    "MiniLMEmbedder",
    "OpenAIEmbedder",
    "ScriptedChatModel",
    "Usage",
    "build_embedder",
]
