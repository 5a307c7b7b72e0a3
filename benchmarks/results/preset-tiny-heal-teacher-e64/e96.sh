#!/usr/bin/env bash
# issue 15, tiny: one knob, E = 96 instead of 64 (the tiny preset's chain otherwise: 60 distil steps, 72 % heads /
# 85 % FFN pruned, healed from the cached teacher 8,000 steps at 3e-4). Compare: tiny.work/heal (E = 64), train 0.8828 at 8,000.
set -euo pipefail
cd "${OUT:-.}"
EB=${EB:-edgebert}
W=${W:?the tiny E=64 run work dir, e.g. runs/tiny.work}
D=${D:-../shared/data}
COMMON=(--teacher default --corpus $D/corpus/sotu.txt.gz $W/corpus/stsb-train.txt $W/corpus/sst2-train.txt
  --alpha-mlm 0 --alpha-ce 0 --alpha-cos 1 --alpha-pooled 1 --cos-layers mapped --mlm-probability 0 --batch-size 32
  --seq-len 64 --group-by-length --warmup-ratio 0.05 --eval-sts $W/corpus/eval-sts.csv --sentences
  --teacher-cache $W/teacher-cache --seed 42 --force)
t() { echo "== $1 $(date +%s)"; }
t distill
nice -n 10 $EB distill "${COMMON[@]}" --student-layers 3 --embedding-dim 96 --lr 1e-4 --steps 60 --eval-steps 20 --save-steps 20 --out e96-distill > e96-distill.log 2>&1
t prune
nice -n 10 $EB compress --model e96-distill --out e96-pruned --prune-heads 0.72 --prune-ffn 0.85 \
  --calibration $W/corpus/calibration.txt --calibration-samples 256 --head-scope global --force --quiet > e96-prune.log 2>&1
t heal
nice -n 10 $EB distill "${COMMON[@]}" --student-init e96-pruned --layer-map 0,3,5 --lr 3e-4 --steps 8000 --out e96-healed-8k > e96-heal.log 2>&1
t end
