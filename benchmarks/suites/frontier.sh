#!/bin/bash
# A frontier in one bench run: each student model dir exported to ONNX int8, TFLite int8 and TF.js uint8,
# then benched beside the teacher (PyTorch fp32, the reference) and its fp32 ONNX and TF.js exports.
# Committed result: benchmarks/results/frontier/ (results/frontier/chain.sh names the model dirs it used).
#
#   benchmarks/suites/frontier.sh TEACHER_EXPORTS WORK OUT LABEL=MODEL_DIR...
#     TEACHER_EXPORTS  dir with teacher-onnx-none/ and teacher-tfjs-none/ (edgebert export --target onnx|tfjs)
#     WORK             where the student exports go (finished ones are reused);  OUT: the bench report dir
set -euo pipefail
X=$1 WORK=$2 OUT=$3
shift 3
cd "$(dirname "$0")/../.."
DATA=../shared/data
E=.venv/bin/edgebert
items=(teacher=default teacher-onnx="$X/teacher-onnx-none" teacher-tfjs="$X/teacher-tfjs-none")
for pair in "$@"; do
  label=${pair%%=*} model=${pair#*=}
  for t in "onnx int8" "tflite int8" "tfjs uint8"; do
    set -- $t
    if [ ! -f "$WORK/$label-$1-$2/edgebert.json" ]; then  # a finished export in WORK is reused
      $E export --target "$1" --quantize "$2" --model "$model" --out "$WORK/$label-$1-$2"
    fi
    items+=("$label-$1-$2=$WORK/$label-$1-$2")
  done
done
.venv/bin/python -m edgebert.bench "${items[@]}" --out "$OUT" --force --reference teacher --seq-len 128 --batch 1 --threads 1 \
  --warmup 5 --repeats 30 --timeout 3600 --sts-limit-for tfjs=500 --sts $DATA/stsb/dev.csv
