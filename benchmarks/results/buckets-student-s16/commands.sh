#!/usr/bin/env bash
# session 16, issue 17, AMD EPYC (KVM; AVX2, AVX-512 VNNI), 2 cores, nothing else running: the small preset's student
# (results/preset-small-s15, heal 12,000 steps) re-exported with this session's TF.js graph (Dense layers as one
# broadcast product) and timed with this session's loaders (each bucket graph gets only the weights its nodes name);
# TFLite is session 15's export (its code did not change). OLD = session 15's TF.js export (results/buckets-student-s15).
S=A/small.work/heal/student B=A/s16 OLD=A/b17/tfjs-b
edgebert export --target tfjs --quantize uint8 --buckets --model $S --out $B/tfjs-b --force
edgebert bench small-tfjs=$B/tfjs-b small-tflite=A/b17/tflite-b --texts benchmarks/results/buckets-student/texts.txt \
  --texts-limit 300 --seq-len 128 --repeats 30 --out $B/report --force
node benchmarks/tfjs_bucket_curve.mjs $B/tfjs-b 80 > bucket-curve.txt
for T in 12 16 128; do  # before (session 15's graph and loader) against after, interleaved in one process
  node benchmarks/tfjs_call_compare.mjs --seq-len $T --rounds 200 before=$OLD@whole-shard own-weights=$OLD \
    new=$B/tfjs-b before-again=$OLD@whole-shard new-again=$B/tfjs-b
done > call-compare.txt
cd demo_app
node --import tsx scripts/bench.ts --model-dir $B/tfjs-b --runs 300 --texts ../benchmarks/results/buckets-student/texts.txt --node > demo-bench-node.txt
node scripts/build-web.mjs && node --import tsx scripts/precompute.ts --model-dir $B/tfjs-b
node --import tsx scripts/bench.ts --model-dir $B/tfjs-b --runs 40 --browser > demo-bench-browser.txt
