#!/usr/bin/env bash
# session 17, issue 17, AMD EPYC (KVM; AVX2, AVX-512 VNNI), 2 cores, nothing else running. The exports are session
# 16's (TF.js, results/buckets-student-s16) and session 15's (TFLite): the export code did not change this session.
# What changed is how bench tokenizes in its app-like latency: TF.js in JS inside Node with the demo app's own
# tokenizer (edgebert/targets/tfjs/js/shared/edge_tokenizer.mjs), the others with the model's Rust tokenizer called
# directly (edgebert/bench/app_tokenizer.py); every text's ids checked against transformers'.
B=A/s16 T=A/b17/tflite-b  # A = the artifacts directory of sessions 15-17
for run in 1 2 3 4 5; do
  edgebert bench small-tfjs=$B/tfjs-b small-tflite=$T --texts benchmarks/results/buckets-student/texts.txt \
    --texts-limit 300 --seq-len 128 --repeats 30 --out report-run$run --force
done  # report.* here is run 1; runs.txt has each run's app-latency section
cd demo_app
node --import tsx scripts/bench.ts --model-dir $B/tfjs-b --runs 300 --texts ../benchmarks/results/buckets-student/texts.txt --node > demo-bench-node.txt
node scripts/build-web.mjs && node --import tsx scripts/precompute.ts --model-dir $B/tfjs-b
node --import tsx scripts/bench.ts --model-dir $B/tfjs-b --runs 40 --browser > demo-bench-browser.txt
# Per-bucket graphs against one graph with a free sequence axis (the alternative), the same student:
S=A/small.work/heal/student
python benchmarks/tfjs_free_axis.py $S A/s17/tfjs-free     # traced as the export does, sequence length unknown
node benchmarks/tfjs_free_axis.mjs $B/tfjs-b A/s17/tfjs-free --texts benchmarks/results/buckets-student/texts.txt --limit 300 > free-axis-wasm.txt
node benchmarks/tfjs_webgl_shapes.mjs $B/tfjs-b A/s17/tfjs-free --texts benchmarks/results/buckets-student/texts.txt --limit 100 > webgl-shapes.txt
