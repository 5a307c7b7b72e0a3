#!/usr/bin/env bash
# The short comparison that ran instead of commands.sh (which did not fit the time on a shared machine): the small
# preset's [distill] settings at 600 steps instead of 2,000, without the teacher cache, one torch thread, on the
# corpus files the pipeline writes into its work dir (WORK/corpus: the State of the Union passages' sentences, the
# STS-B and SST-2 train sentences, one word-replacement variant of each, and the 1,000 STS-B train pairs the
# checkpoint is chosen on). A = the output directory.
A=${A:?output directory}
C=${C:?the pipeline work dir\'s corpus/ folder}
D=../shared/data
COMMON="--teacher default --corpus $D/corpus/sotu.txt.gz $C/stsb-train.txt $C/sst2-train.txt $C/augmented.txt
  --embedding-dim 128 --steps 600 --batch-size 32 --seq-len 64 --lr 3e-4 --warmup-ratio 0.05 --group-by-length
  --alpha-mlm 0 --alpha-ce 0 --alpha-cos 0 --alpha-pooled 1 --mlm-probability 0 --sentences --eval-sts $C/eval-sts.csv
  --eval-steps 200 --save-steps 200 --logging-steps 50 --threads 1 --force"
nice -n 10 .venv/bin/edgebert distill $COMMON --student-layers 6 --layer-groups 3 --out $A/shared
nice -n 10 .venv/bin/edgebert distill $COMMON --student-layers 3 --out $A/unshared
for s in shared unshared; do
  nice -n 10 .venv/bin/edgebert export --model $A/$s --target onnx --quantize int8 --out $A/$s-onnx-int8 --force
done
nice -n 10 .venv/bin/edgebert bench teacher=default unshared=$A/unshared shared=$A/shared unshared-onnx-int8=$A/unshared-onnx-int8 \
  shared-onnx-int8=$A/shared-onnx-int8 --sts $D/stsb/dev.csv --texts-limit 0 --repeats 10 --out $A/bench
