#!/usr/bin/env bash
cd /work/main
D=../shared/data
start=$(date +%s)
nice -n 5 .venv/bin/edgebert pipeline --recipe /work/artifacts/s13/small-plateau.toml --corpus $D/corpus/sotu.txt.gz $D/stsb/train.csv $D/sst2/train.tsv \
  --eval-sts $D/stsb/train.csv --sts $D/stsb/dev.csv --out /work/artifacts/s13/small-plateau --force
echo "exit $? after $(( $(date +%s) - start )) s"
