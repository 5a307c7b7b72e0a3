#!/usr/bin/env bash
# The `small` preset's pruned student (S: a `small` run's compress/student) at 8 bits in ExecuTorch and ONNX Runtime,
# timed in one bench run per order (run1: ONNX first, run2: ExecuTorch first), seq 16 and 128, batch 1, one thread,
# no other job running. AMD EPYC, 2 cores. The ExecuTorch export tries no float island first: this student
# holds with none (its ONNX int8 keeps the FFN down-projections float).
set -euo pipefail
S=${S:?the directory of the small preset pruned student}
A=${A:?a scratch directory for the exports}
.venv/bin/edgebert export --model "$S" --target onnx --quantize int8 --out "$A/onnx-int8" --force
.venv/bin/edgebert export --model "$S" --target executorch --quantize int8 --seq-len 128 --out "$A/et-int8" --force
OUT=$(dirname "$0")
.venv/bin/edgebert bench student="$S" small-onnx-int8="$A/onnx-int8" small-et-int8="$A/et-int8" --reference student \
  --seq-len 16 128 --batch 1 --threads 1 --warmup 10 --repeats 50 --texts-limit 0 --out "$OUT/run1" --force
.venv/bin/edgebert bench student="$S" small-et-int8="$A/et-int8" small-onnx-int8="$A/onnx-int8" --reference student \
  --seq-len 16 128 --batch 1 --threads 1 --warmup 10 --repeats 50 --texts-limit 0 --out "$OUT/run2" --force
.venv/bin/edgebert bench student="$S" small-et-int8="$A/et-int8" small-onnx-int8="$A/onnx-int8" --reference student \
  --seq-len 16 128 --batch 1 --threads 1 --warmup 10 --repeats 50 --texts-limit 0 --out "$OUT/run3" --force
