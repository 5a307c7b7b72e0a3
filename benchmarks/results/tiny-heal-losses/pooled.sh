#!/usr/bin/env bash
# issue 15, tiny: one knob, the heal's losses: pooled cosine only (--alpha-cos 0) instead of pooled + mapped-layer
# token cosine, from the tiny preset's pruned E=96 student, same cache (read in part), 8,000 steps at 3e-4.
# Compare: the preset's heal stage, train 0.8888 (best at 5,600).
set -euo pipefail
cd "${OUT:-.}"
EB=${EB:-edgebert}
W=${W:?the tiny preset run work dir (E=96, cos+pooled), e.g. runs/tiny.work}
D=${D:-../shared/data}
$EB distill --teacher default --corpus $D/corpus/sotu.txt.gz $W/corpus/stsb-train.txt $W/corpus/sst2-train.txt \
  --alpha-mlm 0 --alpha-ce 0 --alpha-cos 0 --alpha-pooled 1 --cos-layers mapped --mlm-probability 0 --batch-size 32 \
  --seq-len 64 --group-by-length --warmup-ratio 0.05 --eval-sts $W/corpus/eval-sts.csv --sentences \
  --teacher-cache $W/teacher-cache --seed 42 --force --student-init $W/compress/student --layer-map 0,3,5 --lr 3e-4 \
  --steps 8000 --out tiny-pooled-8k > tiny-pooled.log 2>&1
echo done
# then: python benchmarks/stage_sts.py --train $D/stsb/train.csv --dev $D/stsb/dev.csv --train-limit 1000 \
#   teacher=<packaged teacher> pruned=$W/compress/student healed-cos-pooled=$W/heal/student healed-pooled-only=tiny-pooled-8k
