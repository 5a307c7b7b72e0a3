// Per-bucket static graphs against one graph with a free sequence axis (benchmarks/tfjs_free_axis.py), in Node on
// the wasm backend, one text at a time as an app embeds it: each text tokenized by the app's tokenizer
// (edgebert/targets/tfjs/js/shared/edge_tokenizer.mjs), then run padded to its bucket on that bucket's graph, and
// unpadded (its own length) on the free-axis graph; the two interleaved per text. Prints the median ms of each over
// all texts and over the texts of the median length, the median of the per-text ratios, and how far apart the two
// graphs' embeddings are (they compute the same function).
//   node benchmarks/tfjs_free_axis.mjs BUCKETS_EXPORT_DIR FREE_AXIS_DIR --texts FILE [--limit 300]
import fs from 'node:fs';
import path from 'node:path';
import { createRequire } from 'node:module';

import { loadGraph, outputNodes } from '../edgebert/targets/tfjs/js/load_export.mjs';
import { bucketsAndFreeAxis } from './tfjs_texts.mjs';
import { embedOnce, timedCall } from './tfjs_timing.mjs';

const require = createRequire(new URL('../edgebert/targets/tfjs/js/package.json', import.meta.url));
const tf = require('@tensorflow/tfjs');
require('@tensorflow/tfjs-backend-wasm');

const { bucketsDir, freeDir, texts, graphs, encoded } = bucketsAndFreeAxis('tfjs_free_axis.mjs', 300);

await tf.setBackend('wasm');
await tf.ready();
const bucketGraphs = new Map();
for (const g of graphs) {
  const [output] = outputNodes(bucketsDir, g.model_file, ['sentence_embedding']);
  bucketGraphs.set(g.seq_len, { model: await loadGraph(tf, bucketsDir, g.model_file), output });
}
const [freeOutput] = outputNodes(freeDir, 'model.json', ['sentence_embedding']);
const free = { model: await loadGraph(tf, freeDir, 'model.json'), output: freeOutput };

let worst = 1;
for (const e of encoded) { // the same function: cosine of the two embeddings per text (also warms every shape up)
  const a = await embedOnce(tf, bucketGraphs.get(e.inputIds.length), e.inputIds, e.length);
  const b = await embedOnce(tf, free, e.inputIds.slice(0, e.length), e.length);
  let dot = 0, na = 0, nb = 0;
  for (let i = 0; i < a.length; i++) { dot += a[i] * b[i]; na += a[i] * a[i]; nb += b[i] * b[i]; }
  worst = Math.min(worst, dot / Math.sqrt(na * nb));
}
const times = { buckets: [], free: [] };
for (const e of encoded) {
  times.buckets.push(await timedCall(tf, bucketGraphs.get(e.inputIds.length), e.inputIds, e.length));
  times.free.push(await timedCall(tf, free, e.inputIds.slice(0, e.length), e.length));
}
const median = (x) => [...x].sort((a, b) => a - b)[x.length >> 1];
const lengths = encoded.map((e) => e.length);
const mid = median(lengths);
const at = lengths.map((n, i) => (n === mid ? i : -1)).filter((i) => i >= 0);
const ratio = (idx) => median(idx.map((i) => times.free[i] / times.buckets[i]));
const all = [...lengths.keys()];
const ops = (dir, file) => JSON.parse(fs.readFileSync(path.join(dir, file), 'utf8')).modelTopology.node.filter((n) => n.op !== 'Const').length;
const midGraph = graphs.find((g) => g.seq_len >= mid);
console.log(`node ${process.version}, tfjs ${tf.version.tfjs} ${tf.getBackend()}; ${texts.length} texts, tokens median ${mid}; graph ops ` +
  `(not constants): free axis ${ops(freeDir, 'model.json')}, bucket ${midGraph.seq_len} ${ops(bucketsDir, midGraph.model_file)}`);
console.log(`embeddings, free axis vs buckets: min cosine ${worst.toFixed(7)}`);
console.log('| texts | n | buckets ms median | free axis ms median | free / buckets (median per text) |');
console.log('|---|---|---|---|---|');
for (const [label, idx] of [['all', all], [`median length (${mid} tokens)`, at]]) {
  const m = (k) => median(idx.map((i) => times[k][i])).toFixed(2);
  console.log(`| ${label} | ${idx.length} | ${m('buckets')} | ${m('free')} | ${ratio(idx).toFixed(2)}x |`);
}
