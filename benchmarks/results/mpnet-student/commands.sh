#!/usr/bin/env bash
# all-mpnet-base-v2 into a ≤ 8 MB BERT-shaped student across tokenizers (AMD EPYC, 2 cores; the bench's latency
# columns ran beside the test suite and are not a measurement; its STS-B column is the claim).
#   SMALL_DISTILLED: the `small` preset's distilled student before pruning (its pipeline work dir's distill/student)
EDGEBERT_MPNET=/path/to/all-mpnet-base-v2 nice -n 5 benchmarks/mpnet_student.sh SMALL_DISTILLED WORK \
  benchmarks/results/mpnet-student ../shared/data 4000
# student-manifest.json: the distilled student's recipe, its STS-B *train* evaluations (1,000 pairs) and the targets.
