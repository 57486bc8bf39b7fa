"""Configuration of the EverMemOS layer (pydantic, JSON-loadable from a layer-config file)."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from membase.layers.base import MemBaseConfig
from membase.layers.evermemos.prompts import check_prompt_overrides

__all__ = [
    "BoundaryDetectionConfig",
    "ClusteringConfig",
    "EmbeddingConfig",
    "EverMemOSConfig",
    "LLMConfig",
    "MemoryExtractionConfig",
    "OnlineRetrieverConfig",
    "ProfileConfig",
]


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid")


class LLMConfig(_Strict):
    """Chat model used by every EverMemOS stage (boundary, extraction, agentic retrieval)."""

    provider: Literal["openai", "fake"] = "openai"
    """`openai`: any OpenAI-compatible endpoint; `fake`: the deterministic in-library fake."""
    model: str = "gpt-4o-mini"
    api_key: str | None = None
    """Key for the endpoint; None reads the credential pool from the environment."""
    base_url: str | None = None
    api_config_path: str | None = None
    """`api_config.json` with `{"api_keys": [...], "base_urls": [...]}` (wins over key/base_url)."""
    temperature: float = Field(0.3, ge=0.0, le=2.0)
    max_tokens: int = Field(16384, ge=1)
    cache_dir: str | None = None
    """Optional on-disk response cache (replays reruns instead of paying)."""


class EmbeddingConfig(_Strict):
    """Embedding model of the BM25 + dense index."""

    provider: Literal["minilm", "openai", "vllm", "deepinfra", "fake"] = "minilm"
    """`minilm`: local all-MiniLM-L6-v2; `openai`/`vllm`/`deepinfra`: OpenAI-compatible endpoint."""
    model: str = "all-MiniLM-L6-v2"
    api_key: str | None = None
    base_url: str | None = None
    embedding_dims: int = Field(384, ge=1)


class BoundaryDetectionConfig(_Strict):
    """When a buffered conversation segment is closed into a memcell."""

    hard_token_limit: int = Field(8192, ge=1)
    hard_message_limit: int = Field(50, ge=2)
    use_smart_mask: bool = True
    """Hide the newest history message from the boundary judge once the buffer is long."""
    smart_mask_threshold: int = Field(5, ge=2)


class ClusteringConfig(_Strict):
    """Accepted for config compatibility; clustering never feeds retrieval and is not run here."""

    enabled: bool = False
    similarity_threshold: float = 0.65
    max_time_gap_days: float = 7.0


class ProfileConfig(_Strict):
    """Accepted for config compatibility; profile extraction is not run here."""

    enabled: bool = False
    scenario: Literal["assistant", "group_chat"] = "assistant"
    min_confidence: float = 0.6
    batch_size: int = 50


class OnlineRetrieverConfig(_Strict):
    """Hybrid BM25 + embedding retrieval, optionally agentic (two rounds)."""

    retrieval_mode: Literal["agentic", "hybrid", "bm25_only", "emb_only"] = "agentic"
    bm25_top_n: int = Field(50, ge=1)
    emb_top_n: int = Field(50, ge=1)
    rrf_k: int = Field(60, ge=1)
    final_top_k: int = Field(20, ge=1)
    use_reranker: bool = False
    """Rerank the check set and the merged pool (the `overlap` scorer: lexical, offline)."""
    reranker_provider: Literal["overlap"] = "overlap"
    use_multi_query: bool = True
    sufficiency_check_docs: int = Field(10, ge=1)

    @model_validator(mode="after")
    def _check_sizes(self) -> OnlineRetrieverConfig:
        if not self.sufficiency_check_docs <= self.final_top_k <= min(self.bm25_top_n, self.emb_top_n):
            raise ValueError(
                "retrieval_config needs sufficiency_check_docs <= final_top_k <= min(bm25_top_n, emb_top_n); "
                f"got {self.sufficiency_check_docs}, {self.final_top_k}, "
                f"min({self.bm25_top_n}, {self.emb_top_n})"
            )
        return self


class MemoryExtractionConfig(_Strict):
    """Which enrichments are extracted from each memcell (the episode always is)."""

    enable_foresight: bool = False
    enable_event_log: bool = True


class EverMemOSConfig(MemBaseConfig):
    """EverMemOS layer configuration (JSON keys of the layer-config file)."""

    llm_config: LLMConfig = Field(default_factory=LLMConfig)
    embedding_config: EmbeddingConfig = Field(default_factory=EmbeddingConfig)
    boundary_config: BoundaryDetectionConfig = Field(default_factory=BoundaryDetectionConfig)
    clustering_config: ClusteringConfig = Field(default_factory=ClusteringConfig)
    profile_config: ProfileConfig = Field(default_factory=ProfileConfig)
    retrieval_config: OnlineRetrieverConfig = Field(default_factory=OnlineRetrieverConfig)
    extraction_config: MemoryExtractionConfig = Field(default_factory=MemoryExtractionConfig)
    prompt_overrides: dict[str, str] = Field(default_factory=dict)
    """Replacement texts of prompt templates, keyed by their graph variable name (e.g.
    `boundary-detection-prompt-template`; see `prompts.PROMPT_TEMPLATES`); same placeholders."""

    @field_validator("prompt_overrides")
    @classmethod
    def _known_prompts(cls, value: dict[str, str]) -> dict[str, str]:
        check_prompt_overrides(value)
        return value

    def get_llm_models(self) -> list[str]:
        """The chat model every stage calls."""
        return [self.llm_config.model]
