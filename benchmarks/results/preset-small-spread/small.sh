#!/usr/bin/env bash
# issue 15, session 13: the small preset as committed at 64bd8af (pooled-only heal, 8,000 steps at 3e-4) with the
# checkpoint pairs spread over STS-B train (9c1e49d), fresh (teacher cache built in the run), alone on the machine.
cd /work/main
D=../shared/data
start=$(date +%s)
nice -n 5 .venv/bin/edgebert pipeline --preset small --corpus $D/corpus/sotu.txt.gz $D/stsb/train.csv $D/sst2/train.tsv \
  --eval-sts $D/stsb/train.csv --sts $D/stsb/dev.csv --out /work/artifacts/s13/small --force
echo "exit $? after $(( $(date +%s) - start )) s"
