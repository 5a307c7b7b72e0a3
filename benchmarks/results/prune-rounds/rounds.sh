#!/usr/bin/env bash
# issue 15, stage 2: pruning in rounds while distilling from the teacher (cache), vs one shot + the same steps.
# usage: rounds.sh START_STUDENT
set -euo pipefail
cd WORK
EB=edgebert
START=$1
DIST=(--teacher default --corpus ../shared/data/corpus/sotu.txt.gz corpus/stsb-train.txt corpus/sst2-train.txt
  --layer-map 0,3,5 --alpha-mlm 0 --alpha-ce 0 --alpha-cos 1 --alpha-pooled 1 --cos-layers mapped --mlm-probability 0
  --batch-size 32 --seq-len 64 --group-by-length --lr 1e-4 --warmup-ratio 0.05 --eval-sts sts-train1000.csv
  --eval-steps 250 --save-steps 250 --logging-steps 50 --sentences --teacher-cache tcache --seed 42)
CAL=(--calibration calibration.txt --calibration-samples 256 --seq-len 64 --head-scope global)
t() { echo "== $1 $(date +%s)"; }
# rounds: heads 36 -> 27 -> 20 -> 14, FFN 1536 -> 1100 -> 770 -> 507 (each fraction of what is left)
prev=$START; r=0
for spec in "0.25 0.284" "0.26 0.30" "0.30 0.342"; do
  r=$((r+1)); set -- $spec
  t "round$r-prune"; nice -n 10 $EB compress --model $prev --out rounds/p$r --prune-heads $1 --prune-ffn $2 "${CAL[@]}" --force --quiet > rounds-p$r.log 2>&1
  t "round$r-distill"; nice -n 10 $EB distill --student-init rounds/p$r --steps 1000 "${DIST[@]}" --out rounds/d$r --force > rounds-d$r.log 2>&1
  prev=rounds/d$r
done
t "oneshot-prune"; nice -n 10 $EB compress --model $START --out rounds/oneshot-p --prune-heads 0.6 --prune-ffn 0.67 "${CAL[@]}" --force --quiet > rounds-op.log 2>&1
t "oneshot-distill"; nice -n 10 $EB distill --student-init rounds/oneshot-p --steps 3000 "${DIST[@]}" --out rounds/oneshot-d --force > rounds-od.log 2>&1
t end
