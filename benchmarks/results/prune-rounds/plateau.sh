#!/usr/bin/env bash
# issue 15, stage 1: the unpruned 3-layer E=128 student to its plateau, with and without the in-batch similarity loss.
set -euo pipefail
cd WORK
EB=edgebert
COMMON=(--teacher default --corpus ../shared/data/corpus/sotu.txt.gz corpus/stsb-train.txt corpus/sst2-train.txt
  --student-layers 3 --layer-map 0,3,5 --embedding-dim 128 --alpha-mlm 0 --alpha-ce 0 --alpha-cos 1 --alpha-pooled 1
  --cos-layers mapped --mlm-probability 0 --steps 2000 --batch-size 32 --seq-len 64 --group-by-length --lr 1e-4
  --warmup-ratio 0.05 --eval-sts sts-train1000.csv --eval-steps 250 --save-steps 250 --logging-steps 50
  --sentences --teacher-cache tcache --seed 42)
for v in A B; do
  extra=(); [ $v = B ] && extra=(--alpha-sim 10)
  start=$(date +%s)
  echo "== $v start $(date -Is)"
  nice -n 19 $EB distill "${COMMON[@]}" "${extra[@]}" --out plateau-$v --force > plateau-$v.log 2>&1 || echo "== $v FAILED"
  echo "== $v done $(( $(date +%s) - start )) s"
done
