#!/usr/bin/env bash
# The `small` preset's student at 4 bits on the int8 kernels: its pruned student (the preset's compress
# stage) healed from the teacher on each w4a8 weight grid with the preset's heal settings (12,000 steps, lr 3e-4,
# seq 64, pooled cosine, the teacher cache; the checkpoint kept on the STS-B train pairs), exported at w4a8 and at
# int8, and benched against the teacher on STS-B dev (1,500 pairs) at seq 16 and 128, batch 1, one thread.
# AMD EPYC (KVM; AVX2, AVX-512 VNNI), 2 cores; the bench ran with nothing else running.
#   S = the small preset's work dir after its compress stage (edgebert pipeline --preset small $DATA --work S, stopped
#       in its heal stage, which heal_on_grid.py replaces)
set -euo pipefail
S=${S:?the work dir of a small preset run after its compress stage}
Q=${Q:?a scratch directory for the students and exports}
TEXT=../shared/data/corpus/sotu.txt.gz
# The two heals ran side by side (the ExecuTorch one with OMP_NUM_THREADS=1):
python benchmarks/suites/heal_on_grid.py onnx-w4a8 "$Q/qat-onnx" 12000 "$S" $TEXT
OMP_NUM_THREADS=1 python benchmarks/suites/heal_on_grid.py executorch-w4a8 "$Q/qat-et" 12000 "$S" $TEXT
for q in w4a8 int8; do
  edgebert export --target onnx --quantize $q --model "$Q/qat-onnx" --out "$Q/onnx-$q" --force
  edgebert export --target executorch --quantize $q --model "$Q/qat-et" --seq-len 128 --out "$Q/et-$q" --force
done
edgebert bench teacher=default onnx-w4a8="$Q/onnx-w4a8" onnx-int8="$Q/onnx-int8" et-w4a8="$Q/et-w4a8" \
  et-int8="$Q/et-int8" --sts ../shared/data/stsb/dev.csv --seq-len 16 128 --batch 1 --threads 1 --repeats 30 \
  --texts-limit 0 --out benchmarks/results/w4a8/bench --force
# The kernels alone (et-kernels.txt):
python benchmarks/experiments/et_4bit_kernels.py 2 100
# Timing-only reruns (timing-runs.txt), nothing else running:
#   edgebert bench et-int8=... et-w4a8=... onnx-int8=... onnx-w4a8=... --seq-len 16 128 --batch 1 --threads 1 --warmup 10 --repeats 50 --texts-limit 0 --out RUN2
#   edgebert bench et-w4a8=... et-int8=... --seq-len 16 128 --batch 1 --threads 1 --warmup 10 --repeats 100 --texts-limit 0 --out RUN3 (and RUN4)
# TFLite w4a8 (tflite/): the same heal on the tflite-w4a8 grid (alone on the machine; its last step is its best on the
# STS-B train pairs, 0.7856), exported at w4a8 and int8 with one length (128) and with --buckets, and benched with
# nothing else running:
python benchmarks/suites/heal_on_grid.py tflite-w4a8 "$Q/qat-tflite" 12000 "$S" $TEXT
for q in w4a8 int8; do
  edgebert export --target tflite --quantize $q --model "$Q/qat-tflite" --out "$Q/tfl-$q" --force
  edgebert export --target tflite --quantize $q --buckets --model "$Q/qat-tflite" --out "$Q/tfl-$q-b" --force
done
edgebert bench teacher=default tflite-w4a8="$Q/tfl-w4a8" tflite-int8="$Q/tfl-int8" tflite-w4a8-buckets="$Q/tfl-w4a8-b" \
  tflite-int8-buckets="$Q/tfl-int8-b" --sts ../shared/data/stsb/dev.csv --seq-len 16 128 --batch 1 --threads 1 \
  --repeats 30 --texts-limit 0 --out benchmarks/results/w4a8/tflite --force
# ExecuTorch w4a8, a second run of its heal (executorch-seed7/): the same heal with the [distill] seed 7 instead of
# the preset's 42, alone on the machine. Kept over the first on the STS-B train pairs (0.7842 at step 9,600 against
# the first run's 0.7830); STS-B dev was read only by the bench below.
OMP_NUM_THREADS=1 python benchmarks/suites/heal_on_grid.py executorch-w4a8 "$Q/qat-et-s2" 12000 "$S" $TEXT 7
for q in w4a8 int8; do
  edgebert export --target executorch --quantize $q --model "$Q/qat-et-s2" --seq-len 128 --out "$Q/et2-$q" --force
done
edgebert bench teacher=default et-w4a8="$Q/et2-w4a8" et-int8="$Q/et2-int8" --sts ../shared/data/stsb/dev.csv \
  --seq-len 16 128 --batch 1 --threads 1 --repeats 30 --texts-limit 0 --out benchmarks/results/w4a8/executorch-seed7 --force
python benchmarks/suites/et_call_compare.py int8="$Q/et2-int8" w4a8="$Q/et2-w4a8" --calls 300 --rounds 3  # call-compare.txt
# The three runtimes' w4a8 and int8 exports of the kept students in one bench run (all-runtimes/), nothing else running:
edgebert bench teacher=default onnx-w4a8="$Q/onnx-w4a8" onnx-int8="$Q/onnx-int8" tflite-w4a8="$Q/tfl-w4a8" \
  tflite-int8="$Q/tfl-int8" et-w4a8="$Q/et2-w4a8" et-int8="$Q/et2-int8" --sts ../shared/data/stsb/dev.csv --seq-len 128 \
  --batch 1 --threads 1 --repeats 50 --texts-limit 0 --out benchmarks/results/w4a8/all-runtimes --force
