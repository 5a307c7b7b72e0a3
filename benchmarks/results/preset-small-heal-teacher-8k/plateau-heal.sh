#!/usr/bin/env bash
# issue 15 next experiment (1): the same prune + 8,000-step teacher heal as the preset's -8k run, from session 9's
# 2,000-step plateau (98.0 % dev) instead of the 60-step student. One knob: the start.
set -euo pipefail
cd "${WORK:?set WORK to a scratch dir}"
EB=${EDGEBERT:-edgebert}
W=${RUN_WORK:?set RUN_WORK to the work dir of the preset run}
t() { echo "== $1 $(date +%s)"; }
t prune
nice -n 10 $EB compress --model ${PLATEAU:?set PLATEAU to the 2,000-step unpruned student (prune-rounds/plateau.sh)} --out plateau-pruned --prune-heads 0.6 --prune-ffn 0.67 \
  --calibration $W/corpus/calibration.txt --calibration-samples 256 --head-scope global --force --quiet > plateau-prune.log 2>&1
t heal
nice -n 10 $EB distill --teacher default --student-init plateau-pruned --corpus "${SOTU:?set SOTU to the absolute path of shared/data/corpus/sotu.txt.gz}" \
  $W/corpus/stsb-train.txt $W/corpus/sst2-train.txt --layer-map 0,3,5 --alpha-mlm 0 --alpha-ce 0 --alpha-cos 1 \
  --alpha-pooled 1 --cos-layers mapped --mlm-probability 0 --batch-size 32 --seq-len 64 --group-by-length --lr 1e-4 \
  --warmup-ratio 0.05 --eval-sts $W/corpus/eval-sts.csv --steps 8000 --sentences --teacher-cache $W/teacher-cache \
  --seed 42 --out plateau-healed-8k --force > plateau-heal.log 2>&1
t end
