#!/usr/bin/env bash
# all-mpnet-base-v2 exported to TF.js uint8 (float16 islands chosen on the guard texts in Node: the FFN up- and
# down-projections), then benched against the model on the first 500 STS-B dev pairs (TF.js: 200), seq 128.
# AMD EPYC, 2 cores; the test suite ran beside the bench, so its latencies are not a claim of this report.
#   EDGEBERT_MPNET=DIR benchmarks/results/mpnet-tfjs-uint8/commands.sh WORK OUT   (DIR: benchmarks/suites/fetch_mpnet.py DIR)
set -euo pipefail
WORK=${1:?usage: commands.sh WORK OUT}
OUT=${2:?usage: commands.sh WORK OUT}
.venv/bin/edgebert export --model "$EDGEBERT_MPNET" --target tfjs --quantize uint8 --out "$WORK/mpnet-tfjs-uint8"
.venv/bin/edgebert bench mpnet="$EDGEBERT_MPNET" mpnet-tfjs-uint8="$WORK/mpnet-tfjs-uint8" --reference mpnet \
  --sts ../shared/data/stsb/dev.csv --sts-limit 500 --sts-limit-for tfjs=200 --seq-len 128 --batch 1 --threads 1 \
  --warmup 2 --repeats 10 --out "$OUT" --force
