#!/usr/bin/env bash
# cargo fuzz on the file readers of the core (index files, lexical index files:
# the members of a bundle), SECONDS_PER_TARGET each (default 50: under 2 minutes
# in all). The seed corpus is rust/fuzz/corpus (kept in the repository); the run
# works on a copy, so CI never changes it. To grow it: run longer, then
#   cargo fuzz cmin --fuzz-dir rust/fuzz -O TARGET rust/fuzz/corpus/TARGET
# cargo fuzz needs nightly flags: RUSTC_BOOTSTRAP=1 lets the stable toolchain pass them.
set -euo pipefail
cd "$(dirname "$0")/.."
export RUSTC_BOOTSTRAP=1
command -v cargo-fuzz >/dev/null || cargo install --locked --quiet cargo-fuzz@0.13.2
seconds="${SECONDS_PER_TARGET:-50}"
cargo fuzz build --fuzz-dir rust/fuzz -O
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
for target in index_file lexical_file; do
  cp -r "rust/fuzz/corpus/$target" "$work/$target"
  rc=0
  cargo fuzz run --fuzz-dir rust/fuzz -O "$target" "$work/$target" -- -max_total_time="$seconds" -rss_limit_mb=2048 \
    >"$work/$target.log" 2>&1 || rc=$?
  grep -E "^Done" "$work/$target.log" || true
  if [ "$rc" -ne 0 ]; then  # a crash, an out-of-memory or a time-out: libFuzzer saved the input in rust/fuzz/artifacts
    tail -40 "$work/$target.log" >&2
    echo "fuzz: $target failed (exit $rc)" >&2
    exit "$rc"
  fi
done
