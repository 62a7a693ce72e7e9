#!/bin/bash
# MASSIVE decisions (issue 12 §3): e5 `fit --head`, MiniLM default fit and zero-label, en/fr/zh.
# Usage: bash benches/massive_fits.sh [OUT]  (with the venv active; SHARED defaults to ../shared)
set -u
cd "$(dirname "$0")/.."
D=${SHARED:-../shared}/datasets/massive
M=${SHARED:-../shared}/models/all-minilm-l6-v2
O=${1:-/tmp/runs}; mkdir -p $O
for L in en-US fr-FR zh-CN; do
  echo "== e5 fit --head $L $(date -u +%T)"
  routecore fit --train $D/$L/train.jsonl --val $D/$L/dev.jsonl --out $O/e5head_$L --head --json --no-progress > $O/e5head_$L.fit.json 2> $O/e5head_$L.err
  routecore eval --bundle $O/e5head_$L --data $D/$L/test.jsonl --json --no-progress --out $O/e5head_${L}_out > $O/e5head_$L.eval.json 2>> $O/e5head_$L.err
  python benches/decisions_vs_maxcos.py --train $D/$L/train.jsonl --data $D/$L/test.jsonl --pred $O/e5head_${L}_out --at 0.90,0.95 > $O/e5head_$L.dvm.txt 2>> $O/e5head_$L.err
done
for L in en-US fr-FR zh-CN; do
  echo "== minilm fit $L $(date -u +%T)"
  routecore fit --model $M --train $D/$L/train.jsonl --val $D/$L/dev.jsonl --out $O/mini_$L --json --no-progress > $O/mini_$L.fit.json 2> $O/mini_$L.err
  routecore eval --bundle $O/mini_$L --model $M --data $D/$L/test.jsonl --json --no-progress --out $O/mini_${L}_out > $O/mini_$L.eval.json 2>> $O/mini_$L.err
  python benches/decisions_vs_maxcos.py --model $M --train $D/$L/train.jsonl --data $D/$L/test.jsonl --pred $O/mini_${L}_out --at 0.90,0.95 > $O/mini_$L.dvm.txt 2>> $O/mini_$L.err
  echo "== minilm zero-label $L $(date -u +%T)"
  routecore eval --model $M --train $D/$L/train.jsonl --data $D/$L/test.jsonl --json --no-progress --out $O/minizl_${L}_out > $O/minizl_$L.eval.json 2> $O/minizl_$L.err
  python benches/decisions_vs_maxcos.py --model $M --train $D/$L/train.jsonl --data $D/$L/test.jsonl --pred $O/minizl_${L}_out --at 0.90,0.95 > $O/minizl_$L.dvm.txt 2>> $O/minizl_$L.err
done
echo "== done $(date -u +%T)"
