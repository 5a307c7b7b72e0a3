#!/usr/bin/env bash
# all-mpnet-base-v2 exported to TFLite int8 (the island ladder climbs to the FFN projections and query/key/value in
# float; their weights are stored float16 because int8 ones left 6.7x float16's drift on the guard texts), then benched
# against the model on the first 500 STS-B dev pairs, seq 128.
# AMD EPYC, 2 cores; the test suite ran beside the export and the bench, so its latencies are not a claim of this report.
#   EDGEBERT_MPNET=DIR benchmarks/results/mpnet-tflite-int8/commands.sh WORK OUT   (DIR: benchmarks/suites/fetch_mpnet.py DIR)
set -euo pipefail
WORK=${1:?usage: commands.sh WORK OUT}
OUT=${2:?usage: commands.sh WORK OUT}
.venv/bin/edgebert export --model "$EDGEBERT_MPNET" --target tflite --quantize int8 --out "$WORK/mpnet-tflite-int8"
.venv/bin/edgebert bench mpnet="$EDGEBERT_MPNET" mpnet-tflite-int8="$WORK/mpnet-tflite-int8" --reference mpnet \
  --sts ../shared/data/stsb/dev.csv --sts-limit 500 --seq-len 128 --batch 1 --threads 1 --warmup 2 --repeats 10 \
  --out "$OUT" --force
