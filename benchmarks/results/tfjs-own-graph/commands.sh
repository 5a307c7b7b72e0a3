#!/usr/bin/env bash
# TF.js from the model's own graph against the TF-class path it replaced: the same models, TF.js uint8, buckets
# 12,16,32,64,128, exported by each code path, timed in one run on one machine (Node 20, tfjs 4.22 wasm, one thread).
#   before: edgebert at commit 4778d2b (transformers 4.57.6: TFBertModel from the PyTorch weights), in its own venv
#   after:  edgebert with transformers 5.23.0 (torch.export graph -> TensorFlow ops)
# Models: the packaged teacher (all-MiniLM-L6-v2) and a student of the `small` preset's shape (3 layers, E=128,
# heads [4, 5, 5], FFN 507: `edgebert distill --student-layers 3 --embedding-dim 128 --steps 30` then
# `edgebert compress --prune-heads 0.6 --prune-ffn 0.67`; weights barely trained, which timing does not see).
set -euo pipefail
A=${A:?the directory of the export directories}
OUT=$(dirname "$0")
for who in teacher student; do
  for n in 16 128; do
    node benchmarks/suites/tfjs_call_compare.mjs --seq-len $n --rounds 60 before=$A/before-$who after=$A/after-$who \
      > $OUT/call-$who-$n.txt
  done
done
# App-like latency (tokenized in JS, as the demo app does): buckets vs fixed 128 at the median length, both paths.
edgebert bench before-student=$A/before-student after-student=$A/after-student before-teacher=$A/before-teacher \
  after-teacher=$A/after-teacher --texts benchmarks/results/buckets-student/texts.txt --texts-limit 300 \
  --seq-len 128 --repeats 30 --out $OUT/report --force
# Runs 2 and 3 (runs.txt): the same bench with the after-* items first, --out elsewhere.
# The small preset's own student in its final shape (its compress stage's pruned student, S = A/small.work/compress/student),
# exported with this code and timed tokenized by edgebert-runtime (runs.txt, last section; three runs):
#   edgebert export --target tfjs --quantize uint8 --buckets --model $S --out $A/tfjs-b --force
#   edgebert bench small-tfjs=$A/tfjs-b --texts benchmarks/results/buckets-student/texts.txt --texts-limit 300 \
#     --seq-len 128 --repeats 30 --out $A/bucket-runN --force
# Run 5 (runs.txt): the same export and bench with bench's runs schedule (fixed and bucketed calls alternating every 10
# texts), three times, and twice back to back with the per-text schedule of commit 1f1801b (a worktree of it, its
# edgebert on PYTHONPATH). Where its 16-token call spends its time:
#   node benchmarks/experiments/tfjs_profile_ops.mjs $A/tfjs-b --seq-len 16 --calls 50
