#!/usr/bin/env bash
# The small preset end to end, fresh, alone on the machine (AMD EPYC (KVM; AVX2, AVX-512 VNNI), 2 cores), from the
# repository root; A = the output directory. Then its stage table: results/frontier/chain.sh.
A=${A:?output directory}
D=../shared/data
/usr/bin/time -v nice .venv/bin/edgebert pipeline --preset small --corpus $D/corpus/sotu.txt.gz $D/stsb/train.csv $D/sst2/train.tsv \
  --eval-sts $D/stsb/train.csv --sts $D/stsb/dev.csv --out $A/small --work $A/small.work --force
