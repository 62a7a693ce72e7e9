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
  tests/routers/test_router_api.py tests/routers/test_router_contract.py tests/test_decision.py \
  tests/calibrate/test_calibration.py tests/calibrate/test_exemplar_head.py \
  tests/calibrate/test_linear_head.py tests/calibrate/test_fits.py tests/decide/test_policy.py \
  tests/config/test_specs.py tests/routers/test_bundle.py tests/core/test_index.py \
  tests/core/test_kernels.py tests/core/test_lexical.py tests/core/test_hybrid.py \
  tests/core/test_scoring_step.py tests/routers/test_router_compact.py tests/tools/test_tools.py \
  tests/updates/test_learning.py tests/updates/test_live_updates.py tests/memory/test_memory.py \
  tests/routers/test_context.py tests/routers/test_cascade.py tests/routers/test_knowledge.py \
  tests/routers/test_llm_tools.py tests/routers/test_turn.py tests/decide/test_spelling.py \
  tests/calibrate/test_languages.py tests/core/test_encoder.py tests/core/test_entities.py \
  tests/decide/test_reasons.py tests/test_contract.py tests/test_cli.py tests/core/test_persist.py \
  tests/memory/test_lesson_cache.py tests/routers/test_routing_metrics.py tests/doctor/test_doctor.py
