#!/usr/bin/env bash
# A shared-layer student beside the `small` preset's distilled student, from the repository root; A = the output
# directory. Each recipe is the small preset's [distill] settings, unpruned, exported to ONNX int8, TFLite int8 and
# TF.js uint8 and benched on STS-B dev (the pipeline's bench stage); shared.toml first, then its control.
A=${A:?output directory}
D=../shared/data
for r in shared unshared; do
  /usr/bin/time -v nice -n 10 .venv/bin/edgebert pipeline --recipe benchmarks/results/shared-layers/$r.toml \
    --corpus $D/corpus/sotu.txt.gz $D/stsb/train.csv $D/sst2/train.tsv --eval-sts $D/stsb/train.csv --sts $D/stsb/dev.csv \
    --out $A/$r --work $A/$r.work --force
done
