#!/usr/bin/env bash
# The whole test suite: Rust core (cargo test) and Python (pytest).
# Needs the package installed in the active Python (see README.md).
set -euo pipefail
cd "$(dirname "$0")/.."
# The Rust encoder tests load the ONNX Runtime library shipped in the onnxruntime wheel.
ROUTECORE_ORT_LIB="${ROUTECORE_ORT_LIB:-$(python -c 'from routecore.runtime import onnxruntime_library as f; print(f())')}"
export ROUTECORE_ORT_LIB
cargo test --release -p routecore-core
python -m pytest
