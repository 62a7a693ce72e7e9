#!/usr/bin/env bash
# Release wheel(s) into dist/ (issue 16 §1): manylinux, abi3 (cp39-abi3: one wheel for CPython >= 3.9),
# built with maturin and zig as the linker against glibc 2.17 symbols.
# Needs a Rust toolchain plus `pip install "maturin>=1.9.4,<2" ziglang`.
# Env: WHEEL_OUT (default dist), MANYLINUX (default manylinux_2_17), WHEEL_TARGETS (default
# x86_64-unknown-linux-gnu, plus aarch64-unknown-linux-gnu when that target's std is installed:
# `rustup target add aarch64-unknown-linux-gnu`), CARGO_TARGET_DIR as usual.
set -euo pipefail
cd "$(dirname "$0")/.."
out="${WHEEL_OUT:-dist}"
compat="${MANYLINUX:-manylinux_2_17}"
maturin="${MATURIN:-maturin}"
targets="${WHEEL_TARGETS:-}"
if [ -z "$targets" ]; then
  targets="x86_64-unknown-linux-gnu"
  if [ -d "$(rustc --print sysroot)/lib/rustlib/aarch64-unknown-linux-gnu/lib" ]; then
    targets="$targets aarch64-unknown-linux-gnu"
  else
    echo "build_wheel.sh: no aarch64-unknown-linux-gnu standard library in this toolchain; x86_64 only" >&2
  fi
fi
for target in $targets; do
  # No pyo3/extension-module feature: maturin (>= 1.9.4) sets PYO3_BUILD_EXTENSION_MODULE itself.
  "$maturin" build --release --zig --target "$target" --compatibility "$compat" --out "$out"
done
