#!/usr/bin/env bash
# Serve Qwen3-Embedding-4B (the paper's NaiveRAG embedder) as an OpenAI-compatible /v1/embeddings
# endpoint with vLLM. Needs a GPU and the `vllm` extra (pip install 'memtrace-llm[vllm]'); never
# run on the CPU-only project machine.
#
#   scripts/serve_embeddings.sh [PORT]          # default 8000, binds 127.0.0.1
#
# Then point NaiveRAG at it in the layer config:
#   {"layer_type": "NaiveRAG", "retriever_name_or_path": "openai:Qwen3-Embedding-4B", "retriever_dim": 2560,
#    "embedding_kwargs": {"base_url": "http://127.0.0.1:8000/v1", "api_key": "EMPTY"}}
set -euo pipefail

PORT="${1:-8000}"
MODEL="${EMBEDDING_MODEL:-Qwen/Qwen3-Embedding-4B}"

# Qwen3-Embedding ships a causal-LM architecture, so vLLM must be told to run it as a pooling
# (embedding) model: `--runner pooling` (vLLM >= 0.10.2; older releases spell it `--task embed`).
exec vllm serve "$MODEL" \
  --host 127.0.0.1 \
  --port "$PORT" \
  --runner pooling \
  --served-model-name Qwen3-Embedding-4B \
  --max-model-len 8192 \
  --gpu-memory-utilization "${GPU_MEMORY_UTILIZATION:-0.85}"
