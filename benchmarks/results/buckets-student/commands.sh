#!/usr/bin/env bash
# The small preset's student (results/preset-small: its heal stage's student, S below) exported with --buckets
# (12, 16, 32, 64, 128) as TF.js uint8 and TFLite int8, then: the app-like latency of five `edgebert bench` runs over
# every 10th distinct STS-B dev sentence (texts.txt), the per-bucket curve, the demo core's query latency in Node and
# headless Chromium, and the same student as one graph with a free sequence axis on wasm and WebGL.
# AMD EPYC (KVM; AVX2, AVX-512 VNNI), 2 cores, nothing else running; Node 20, tfjs 4.22 wasm.
# Run from the repository root; A = an absolute scratch directory holding the small preset's work dir.
A=${A:?absolute scratch directory} S=$A/small.work/heal/student T=$PWD/benchmarks/results/buckets-student/texts.txt
edgebert export --target tfjs --quantize uint8 --buckets --model $S --out $A/tfjs-b --force
edgebert export --target tflite --quantize int8 --buckets --model $S --out $A/tflite-b --force
for run in 1 2 3 4 5; do
  edgebert bench small-tfjs=$A/tfjs-b small-tflite=$A/tflite-b --texts $T \
    --texts-limit 300 --seq-len 128 --repeats 30 --out report-run$run --force
done  # report.* here is run 1; runs.txt has each run's app-latency section
node benchmarks/experiments/tfjs_bucket_curve.mjs $A/tfjs-b 80 > benchmarks/results/buckets-student/bucket-curve.txt
cd demo_app
node --import tsx scripts/bench.ts --model-dir $A/tfjs-b --runs 300 --texts $T --node > demo-bench-node.txt
node scripts/build-web.mjs && node --import tsx scripts/precompute.ts --model-dir $A/tfjs-b
node --import tsx scripts/bench.ts --model-dir $A/tfjs-b --runs 40 --browser > demo-bench-browser.txt
cd ..
# Per-bucket graphs against one graph with a free sequence axis, the same student (free-axis-wasm.txt,
# webgl-shapes.txt). The four scripts of this experiment were removed once these files recorded their figures:
# benchmarks/tfjs_free_axis.py (last in commit be8bc43, where it only stops: the TF-class export path it traced with
# is gone), tfjs_free_axis.mjs (4778d2b), tfjs_webgl_shapes.mjs and tfjs_texts.mjs (006b10d). The measured run is
# commit 006b10d, transformers 4.57.6, from a worktree of it (git worktree add FREE_AXIS 006b10d; cd FREE_AXIS):
#   python benchmarks/tfjs_free_axis.py $S $A/tfjs-free     # traced as the export did, sequence length unknown
#   node benchmarks/tfjs_free_axis.mjs $A/tfjs-b $A/tfjs-free --texts $T --limit 300 > free-axis-wasm.txt
#   node benchmarks/tfjs_webgl_shapes.mjs $A/tfjs-b $A/tfjs-free --texts $T --limit 100 > webgl-shapes.txt
