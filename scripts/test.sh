#!/usr/bin/env bash
# The whole test suite: formatters and linters (scripts/lint.sh), Rust core (cargo test) and Python (pytest).
# Needs the package installed in the active Python (see README.md).
set -euo pipefail
cd "$(dirname "$0")/.."
# The Rust encoder tests load the ONNX Runtime library shipped in the onnxruntime wheel.
ROUTECORE_ORT_LIB="${ROUTECORE_ORT_LIB:-$(python -c 'from routecore.core.runtime import onnxruntime_library as f; print(f())')}"
export ROUTECORE_ORT_LIB
bash scripts/lint.sh
cargo test --release -p routecore-core
python -m pytest
# Kernels, compact storage and int8 routing again on the paths of CPUs without
# AVX-512 VNNI (avx2) and without AVX2 (portable).
for level in avx2 portable; do
  ROUTECORE_SIMD=$level cargo test --release -q -p routecore-core --lib --test dot_kernels --test int8_kernels --test compact_step --test route_bias --test lexical
  ROUTECORE_SIMD=$level python -m pytest -q tests/core/test_kernels.py tests/core/test_index.py \
    tests/core/test_scoring_step.py tests/routers/test_router_compact.py tests/core/test_lexical.py \
    tests/core/test_hybrid.py
done
# The VNNI kernel with and without its software prefetch (the default depends on the core: none on Zen 4).
for rows in 0 16; do
  ROUTECORE_PREFETCH_ROWS=$rows cargo test --release -q -p routecore-core --test int8_kernels --test compact_step
done
