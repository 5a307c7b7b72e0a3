#!/bin/bash
# Knob: factorised embeddings (E = 128, ALBERT-shaped 3-layer student) + vocabulary trimming, exported to
# ONNX int8, TFLite int8, TF.js uint8 and benched in one run; its findings are in benchmarks/README.md ("The small preset").
#
#   benchmarks/experiments/knobs_l3_e128.sh TEACHER_EXPORTS WORK OUT [STS_SELECT]
#     TEACHER_EXPORTS  dir with teacher-onnx-none/ and teacher-tfjs-none/;  STS_SELECT: STS csv for checkpoint choice
#     (default: STS-B train; the committed run used 1,000 shuffled train pairs)
set -euo pipefail
X=$1 WORK=$2 OUT=$3
cd "$(dirname "$0")/../.."
DATA=../shared/data
SELECT=${4:-$DATA/stsb/train.csv}
C="$DATA/corpus/sotu.txt.gz $DATA/stsb/train.csv $DATA/sst2/train.tsv"
E=.venv/bin/edgebert
$E distill --teacher default --corpus $C --student-layers 3 --embedding-dim 128 --out "$WORK/l3-e128" --force --steps 40 \
  --batch-size 32 --seq-len 64 --alpha-mlm 0 --alpha-ce 0 --mlm-probability 0 --alpha-cos 1 --alpha-pooled 1 \
  --cos-layers mapped --lr 1e-4 --eval-sts "$SELECT" --eval-steps 20 --save-steps 20 --logging-steps 10
$E compress --model "$WORK/l3-e128" --out "$WORK/l3-e128-v" --force --trim-vocab $C --vocab-min-count 5 --quiet
items=()
for t in "onnx int8" "tflite int8" "tfjs uint8"; do
  set -- $t
  $E export --target "$1" --quantize "$2" --model "$WORK/l3-e128-v" --out "$WORK/exp/l3-e128-v-$1-$2" --force
  items+=("l3-e128-v-$1-$2=$WORK/exp/l3-e128-v-$1-$2")
done
.venv/bin/python -m edgebert.bench teacher=default teacher-onnx="$X/teacher-onnx-none" teacher-tfjs="$X/teacher-tfjs-none" \
  "${items[@]}" --out "$OUT" --reference teacher --seq-len 128 --batch 1 --threads 1 --warmup 5 --repeats 30 \
  --timeout 3600 --sts-limit-for tfjs=100 --sts $DATA/stsb/dev.csv
