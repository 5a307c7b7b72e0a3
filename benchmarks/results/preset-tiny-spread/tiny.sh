#!/usr/bin/env bash
# issue 15: the tiny preset with the checkpoint pairs spread over STS-B train (commit 9c1e49d), nothing else changed.
cd /work/artifacts/s12
while ! grep -q "== s2-prune" small-knobs.out 2>/dev/null; do sleep 20; done
pkill -f small-knobs.sh; sleep 2; pkill -f "edgebert compress --model /work/artifacts/s10/small24k.work/distill/student"
cd /work/main
D=../shared/data
start=$(date +%s)
nice -n 5 .venv/bin/edgebert pipeline --preset tiny --corpus $D/corpus/sotu.txt.gz $D/stsb/train.csv $D/sst2/train.tsv \
  --eval-sts $D/stsb/train.csv --sts $D/stsb/dev.csv --out /work/artifacts/s12/tiny --force
echo "exit $? after $(( $(date +%s) - start )) s"
