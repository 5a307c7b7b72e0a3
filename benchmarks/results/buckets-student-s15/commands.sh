#!/usr/bin/env bash
# session 15, issue 17, AMD EPYC (KVM; AVX2, AVX-512 VNNI), 2 cores, nothing else running: the small preset's student
# (results/preset-small-s15, heal 12,000 steps) exported with buckets, then benched (app latency over every 10th
# distinct STS-B dev sentence), the per-bucket curve, and the demo core's query latency in Node and Chromium.
S=A/small.work/heal/student B=A/b17
edgebert export --target tfjs --quantize uint8 --buckets --model $S --out $B/tfjs-b --force
edgebert export --target tflite --quantize int8 --buckets --model $S --out $B/tflite-b --force
edgebert bench small-tfjs=$B/tfjs-b small-tflite=$B/tflite-b --texts benchmarks/results/buckets-student/texts.txt \
  --texts-limit 300 --seq-len 128 --repeats 30 --out $B/report --force
node benchmarks/tfjs_bucket_curve.mjs $B/tfjs-b 80 > bucket-curve.txt
cd demo_app
node --import tsx scripts/bench.ts --model-dir $B/tfjs-b --runs 300 --texts ../benchmarks/results/buckets-student/texts.txt --node > demo-bench-node.txt
node scripts/build-web.mjs && node --import tsx scripts/precompute.ts --model-dir $B/tfjs-b
node --import tsx scripts/bench.ts --model-dir $B/tfjs-b --runs 40 --browser > demo-bench-browser.txt
