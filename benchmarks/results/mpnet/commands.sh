#!/usr/bin/env bash
# all-mpnet-base-v2 through every target at fp32 and at its 8-bit recipe, against its own sentence-transformers model.
# AMD EPYC, 2 cores; other jobs ran beside it: latencies are not a claim of this report.
set -euo pipefail
DEST=${DEST:?where all-mpnet-base-v2 is, or is to be fetched to}
WORK=${WORK:?a scratch directory for the exports}
[ -d "$DEST" ] || .venv/bin/python benchmarks/suites/fetch_mpnet.py "$DEST"
# Exports (each verified at export: fp32 >= 0.9999, 8-bit >= 0.99), then one bench over what was written. The TFLite
# int8 and TF.js uint8 exports were refused in this run (refused.tsv), so the bench has seven items; TF.js uint8 holds
# since its island ladder (results/mpnet-tfjs-uint8/commands.sh).
EDGEBERT_MPNET=$DEST .venv/bin/python benchmarks/suites/run_suite.py benchmarks/suites/mpnet.toml --work "$WORK" --out benchmarks/results/mpnet --force
