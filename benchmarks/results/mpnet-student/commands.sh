#!/usr/bin/env bash
# all-mpnet-base-v2 into a ≤ 8 MB BERT-shaped student across tokenizers, then a supervised stage on STS-B train
# (AMD EPYC, 2 cores, avx_vnni; the bench's latency columns ran alone on the machine but are not the claim: its STS-B
# column is).
#   SMALL_DISTILLED: the `small` preset's distilled student before pruning (its pipeline work dir's distill/student)
EDGEBERT_MPNET=/path/to/all-mpnet-base-v2 nice -n 5 benchmarks/mpnet_student.sh SMALL_DISTILLED WORK \
  benchmarks/results/mpnet-student ../shared/data 500
# student-manifest.json: the MPNet-distilled student's recipe and its STS-B *train* evaluations (1,000 held-out pairs);
# supervised-finetune.json: the supervised stage (CoSENT on the other 4,729 STS-B train pairs) and its held-out
# Spearman per epoch (epoch 6 kept); supervised-all-finetune.json: the same stage on all 5,749 pairs for 6 epochs.
