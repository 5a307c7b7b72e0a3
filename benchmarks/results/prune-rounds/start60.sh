#!/usr/bin/env bash
# issue 15: is the one-shot gain the start (a 2,000-step plateau vs the preset's 60-step student)? Same as rounds.sh's
# one-shot control, from a 60-step student.
set -euo pipefail
cd WORK
EB=edgebert
COMMON=(--teacher default --corpus ../shared/data/corpus/sotu.txt.gz corpus/stsb-train.txt corpus/sst2-train.txt
  --layer-map 0,3,5 --alpha-mlm 0 --alpha-ce 0 --alpha-cos 1 --alpha-pooled 1 --cos-layers mapped --mlm-probability 0
  --batch-size 32 --seq-len 64 --group-by-length --lr 1e-4 --warmup-ratio 0.05 --eval-sts sts-train1000.csv
  --logging-steps 50 --sentences --teacher-cache tcache --seed 42)
$EB distill "${COMMON[@]}" --student-layers 3 --embedding-dim 128 --steps 60 --eval-steps 20 --save-steps 20 --out start60/student --force > start60-d.log 2>&1
$EB compress --model start60/student --out start60/pruned --prune-heads 0.6 --prune-ffn 0.67 --calibration calibration.txt --calibration-samples 256 --seq-len 64 --head-scope global --force --quiet > start60-p.log 2>&1
$EB distill "${COMMON[@]}" --student-init start60/pruned --steps 3000 --eval-steps 250 --save-steps 250 --out start60/distilled --force > start60-dd.log 2>&1
echo end
