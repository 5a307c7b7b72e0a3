#!/usr/bin/env bash
# The tiny preset end to end, fresh, alone on the machine (AMD EPYC (KVM; AVX2, AVX-512 VNNI), 2 cores), from the
# repository root; T = the output directory. Then its stage table (stage-sts.md here):
#   benchmarks/suites/stage_sts.py --train $D/stsb/train.csv --dev $D/stsb/dev.csv --train-limit 1000 teacher=<packaged
#   teacher> tiny-distill=$T/tiny.work/distill/student ... tiny-vocab=$T/tiny.work/vocab/student
T=${T:?output directory}
D=../shared/data
/usr/bin/time -v nice .venv/bin/edgebert pipeline --preset tiny --corpus $D/corpus/sotu.txt.gz $D/stsb/train.csv $D/sst2/train.tsv \
  --eval-sts $D/stsb/train.csv --sts $D/stsb/dev.csv --out $T/tiny --work $T/tiny.work --force
