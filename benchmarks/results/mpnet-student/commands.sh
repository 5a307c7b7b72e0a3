#!/usr/bin/env bash
# all-mpnet-base-v2 into a ≤ 8 MB BERT-shaped student across tokenizers, then a supervised stage on STS-B train
# (AMD EPYC, 2 cores, avx_vnni; the bench ran alone on the machine, but its latency columns are not the claim: its
# STS-B column is).
#   SMALL_DISTILLED: the `small` preset's distilled student before pruning (its pipeline work dir's distill/student)
set -euo pipefail
RESULTS=benchmarks/results/mpnet-student
OUT=$(mktemp -d)  # the bench replaces its --out directory: written apart, then copied here
EDGEBERT_MPNET=/path/to/all-mpnet-base-v2 SEEDS=0,1 nice -n 5 benchmarks/suites/mpnet_student.sh SMALL_DISTILLED WORK \
  "$OUT" ../shared/data 2000
cp "$OUT"/report.md "$OUT"/report.json "$OUT"/report.png "$RESULTS"/
cp WORK/student/edgebert.json "$RESULTS"/student-manifest.json
cp WORK/supervised/edgebert.json "$RESULTS"/supervised-finetune.json
cp WORK/supervised-all/edgebert.json "$RESULTS"/supervised-all-finetune.json
# student-manifest.json: the MPNet-distilled student's recipe and its STS-B *train* evaluations (1,000 held-out pairs);
# supervised-finetune.json: the supervised stage (CoSENT on the other 4,729 STS-B train pairs, seeds 0 and 1) and the
# held-out Spearman of each epoch and each soup (the average of all 8 epochs of both seeds kept);
# supervised-all-finetune.json: the same stage on all 5,749 pairs, the same average kept.
# The committed supervised-*.json were written by benchmarks/sts_pairs_finetune.py, which `edgebert finetune` replaced
# with the same recipe: a rerun copies the manifests, whose `finetune` block holds the same figures.
# Paths in the copied files read WORK, SMALL_DISTILLED, $EDGEBERT_MPNET and ../shared/data.
