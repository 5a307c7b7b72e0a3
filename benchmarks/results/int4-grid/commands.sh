#!/usr/bin/env bash
# The `small` preset's student at 4 bits: its heal stage trained on the onnx-int4 weight grid, then
# exported to ONNX int4 and int8 and benched on STS-B dev (1500 pairs) at seq 128, batch 1, one thread.
#   S = the small preset's work dir after its compress stage (edgebert pipeline --preset small ... --work S; the run
#       was stopped in its heal stage, which this replaces)
set -euo pipefail
S=${S:?the work dir of a small preset run after its compress stage}
Q=${Q:?a scratch directory for the students and exports}
# the heal stage as the preset runs it (12,000 steps, lr 3e-4, seq 64, pooled cosine, the teacher cache), on the grid;
# its best checkpoint on the STS-B train pairs (step 10,800: 0.7854) is the student (the measured run's end stopped on
# the tie_weights bug fixed with it, and its checkpoint was snapped and saved by hand as distill's end now does):
python benchmarks/suites/heal_on_grid.py onnx-int4 "$Q/qat-onnx" 12000 "$S" ../shared/data/corpus/sotu.txt.gz
edgebert export --target onnx --quantize int4 --model "$Q/qat-onnx" --out "$Q/qat-onnx-int4" --force
edgebert export --target onnx --quantize int8 --model "$Q/qat-onnx" --out "$Q/qat-onnx-int8" --force
edgebert bench qat-onnx-int4="$Q/qat-onnx-int4" qat-onnx-int8="$Q/qat-onnx-int8" --sts ../shared/data/stsb/dev.csv \
  --seq-len 128 --batch 1 --threads 1 --repeats 30 --texts-limit 0 --out benchmarks/results/int4-grid --force
# ExecuTorch: the same heal on the executorch-int4 grid (12,000 steps; its last step is its best on the STS-B train
# pairs, 0.7875), exported at 4 and 8 bits, benched with STS-B dev (executorch/), then timed again in the other order
# (executorch-run2/), the bench alone on the machine:
python benchmarks/suites/heal_on_grid.py executorch-int4 "$Q/qat-et" 12000 "$S" ../shared/data/corpus/sotu.txt.gz
edgebert export --target executorch --quantize int4 --model "$Q/qat-et" --seq-len 128 --out "$Q/qat-et-int4" --force
edgebert export --target executorch --quantize int8 --model "$Q/qat-et" --seq-len 128 --out "$Q/qat-et-int8" --force
edgebert bench qat-et-int4="$Q/qat-et-int4" qat-et-int8="$Q/qat-et-int8" --sts ../shared/data/stsb/dev.csv \
  --seq-len 16 128 --batch 1 --threads 1 --repeats 30 --texts-limit 0 --out benchmarks/results/int4-grid/executorch --force
edgebert bench qat-et-int8="$Q/qat-et-int8" qat-et-int4="$Q/qat-et-int4" --seq-len 16 128 --batch 1 --threads 1 \
  --warmup 10 --repeats 50 --texts-limit 0 --out benchmarks/results/int4-grid/executorch-run2 --force
