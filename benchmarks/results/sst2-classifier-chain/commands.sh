#!/bin/bash
# The SST-2 classifier chain (benchmarks/README.md, "The SST-2 classifier chain"): the teacher fine-tuned by
# make_sst2_classifier.py (as family_table.sh builds it), then the chain recipe end to end. AMD EPYC, 2 cores.
set -euo pipefail
D=${DATA:-../shared/data}
W=${WORK:?a scratch directory}
[ -d "$W/sst2-teacher" ] || .venv/bin/python benchmarks/suites/make_sst2_classifier.py --data "$D/sst2/train.tsv" --out "$W/sst2-teacher"
.venv/bin/edgebert pipeline --recipe benchmarks/suites/sst2_classifier_chain.toml --out "$W/report" \
    --teacher "$W/sst2-teacher" --corpus "$D/sst2/train.tsv" --labels "$W/sst2-teacher/heldout.tsv"
