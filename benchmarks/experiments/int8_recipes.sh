#!/bin/bash
# The int8 recipes tried, on every kernel path and in one bench run (size, latency, STS-B dev retention).
# 1. edgebert's own exports of the default teacher: fp32 ONNX / TFLite, and each int8 recipe as shipped;
# 2. benchmarks/experiments/int8_recipes.py: the candidate recipes (previous and rejected ones too) as bare files, and their
#    min cosine to PyTorch on each kernel path (host + emulated non-VNNI x86 for ONNX, XNNPACK + built-in for TFLite);
# 3. one `edgebert bench` of all of them beside the teacher (PyTorch fp32, the reference).
# Committed result: benchmarks/results/int8-recipes/ (parity.md + report.*); the model files are not committed.
#
#   benchmarks/experiments/int8_recipes.sh WORK OUT
set -euo pipefail
WORK=$1 OUT=$2
cd "$(dirname "$0")/../.."
DATA=../shared/data
E=.venv/bin/edgebert
mkdir -p "$WORK"
for t in "onnx none" "onnx int8" "onnx int8-static" "tflite none" "tflite int8" "tflite int8-static"; do
  set -- $t
  cal=()
  [ "$2" = int8-static ] && cal=(--calibration "$DATA/corpus/sotu.txt.gz")
  [ -f "$WORK/$1-$2/edgebert.json" ] || $E export --target "$1" --quantize "$2" "${cal[@]}" --out "$WORK/$1-$2"
done
.venv/bin/python benchmarks/experiments/int8_recipes.py --onnx-fp32 "$WORK/onnx-none/model.onnx" \
  --tflite-int8 "$WORK/tflite-int8/model.tflite" --calibration "$DATA/corpus/sotu.txt.gz" --out "$WORK/variants"
items=(teacher=default)
for t in onnx-none onnx-int8 onnx-int8-static tflite-none tflite-int8 tflite-int8-static; do items+=("$t=$WORK/$t"); done
for f in "$WORK"/variants/*.onnx "$WORK"/variants/*.tflite; do items+=("$(basename "${f%.*}")=$f"); done
.venv/bin/python -m edgebert.bench "${items[@]}" --tokenizer "$WORK/onnx-none" --out "$OUT" --force --reference teacher \
  --seq-len 128 --batch 1 --threads 1 --warmup 5 --repeats 30 --timeout 3600 --sts "$DATA/stsb/dev.csv"
cp "$WORK/variants/parity.md" "$OUT/parity.md"
