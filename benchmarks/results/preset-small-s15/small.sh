#!/usr/bin/env bash
# session 15: the small preset (augment = 1, heal 12,000) end to end, fresh, alone on the machine
cd /work/main
D=../shared/data
/usr/bin/time -v nice .venv/bin/edgebert pipeline --preset small --corpus $D/corpus/sotu.txt.gz $D/stsb/train.csv $D/sst2/train.tsv \
  --eval-sts $D/stsb/train.csv --sts $D/stsb/dev.csv --out /work/artifacts/s15/small --work /work/artifacts/s15/small.work --force
