#!/usr/bin/env bash
# The core test modules on the oldest dependencies pyproject.toml allows (numpy 1.24, onnxruntime 1.19,
# msgspec 0.19, PyYAML 6.0), in a venv of their own; the package is the built tree (PYTHONPATH=python,
# with the extension `pip install -e .` put there). numpy 1.x promotes and indexes differently from 2.x
# (a uint64 % int is a float; take() wants intp indices): both broke routecore once. About 3 min.
set -euo pipefail
cd "$(dirname "$0")/.."
low="$(mktemp -d)"
trap 'rm -rf "$low"' EXIT
python3 -m venv "$low"
# "name>=X" of each runtime dependency, pinned to X.*
mapfile -t pins < <(python3 - <<'PY'
import re, tomllib
deps = tomllib.load(open("pyproject.toml", "rb"))["project"]["dependencies"]
for d in deps:
    name, low = re.match(r"([A-Za-z0-9_.-]+)\s*>=\s*([0-9.]+)", d).groups()
    print(f"{name}=={low}.*")
PY
)
echo "lowest pins: ${pins[*]}"
# faiss-cpu 1.8 is the last to accept numpy 1.x; tokenizers and onnxruntime's Python API check the encoder.
"$low/bin/pip" install --quiet "${pins[@]}" "faiss-cpu>=1.8,<1.9" "tokenizers>=0.20" pytest hypothesis jsonschema
"$low/bin/python" -c "import numpy, onnxruntime; print('numpy', numpy.__version__, 'onnxruntime', onnxruntime.__version__)"
PYTHONPATH=python:tests "$low/bin/python" -m pytest -q -p no:cacheprovider \
  tests/test_router_api.py tests/test_router_contract.py tests/test_decision.py tests/test_calibration.py \
  tests/test_exemplar_head.py tests/test_linear_head.py tests/test_fits.py tests/test_policy.py tests/test_specs.py \
  tests/test_bundle.py tests/test_index.py tests/test_kernels.py tests/test_lexical.py tests/test_hybrid.py \
  tests/test_scoring_step.py tests/test_router_compact.py tests/test_tools.py tests/test_learning.py \
  tests/test_live_updates.py tests/test_memory.py tests/test_context.py tests/test_cascade.py tests/test_knowledge.py \
  tests/test_llm_tools.py tests/test_turn.py tests/test_spelling.py tests/test_languages.py tests/test_encoder.py \
  tests/test_entities.py tests/test_reasons.py tests/test_contract.py tests/test_cli.py tests/test_persist.py \
  tests/test_lesson_cache.py tests/test_routing_metrics.py tests/test_doctor.py
