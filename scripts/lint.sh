#!/usr/bin/env bash
# Formatters and linters, as CI runs them (issue 35 §5): ruff for Python (pyproject.toml's
# [tool.ruff]), rustfmt and clippy with warnings as errors for both crates.
set -euo pipefail
cd "$(dirname "$0")/.."
ruff format --check python tests benches scripts
ruff check python tests benches scripts
cargo fmt --all --check
cargo clippy --release --all-targets -p routecore-core -p routecore-python -- -D warnings
