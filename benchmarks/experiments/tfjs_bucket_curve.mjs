// What one TF.js call costs at each bucket length of an export (Node, wasm backend): the data behind
// config.DEFAULT_BUCKETS. Each bucket's call is timed right after a call of the longest graph (as an app's query
// meets caches another call has used: "after longest") and again at once ("repeated"); the graphs share one
// decoded copy of the weights, as in the demo app and the Node runner.
//   node benchmarks/experiments/tfjs_bucket_curve.mjs EXPORT_DIR [ROUNDS=80]
// Needs edgebert's TF.js runner packages (npm ci --prefix edgebert/targets/tfjs/js, done by ./install.sh).
import { createRequire } from 'node:module';

import { exportGraphs, loadGraph, outputNodes } from '../../edgebert/targets/tfjs/js/load_export.mjs';
import { timedCall } from '../suites/tfjs_timing.mjs';

const require = createRequire(new URL('../../edgebert/targets/tfjs/js/package.json', import.meta.url));
const tf = require('@tensorflow/tfjs');
require('@tensorflow/tfjs-backend-wasm');
const [dir, roundsArg] = process.argv.slice(2);
if (!dir) { console.error('usage: node benchmarks/experiments/tfjs_bucket_curve.mjs EXPORT_DIR [ROUNDS]'); process.exit(2); }
const rounds = Number(roundsArg ?? 80);
await tf.setBackend('wasm');
await tf.ready();

const { manifest, graphs: buckets } = exportGraphs(dir);
const graphs = [];
for (const { seq_len: T, model_file: file } of buckets) {  // the graphs share one decoded copy of the weights
  graphs.push({ T, model: await loadGraph(tf, dir, file), output: outputNodes(dir, file, ['sentence_embedding'])[0] });
}

// A 10-token sentence ([CLS] 8 word pieces [SEP]) padded to the bucket, read back as an app does (data()).
async function call({ T, model, output }) {
  const n = Math.min(T, 10);
  const ids = new Int32Array(T);
  ids[0] = 101; for (let i = 1; i < n - 1; i++) ids[i] = 2000 + i; ids[n - 1] = 102;
  return timedCall(tf, { model, output }, ids, n);
}

const longest = graphs[graphs.length - 1];
for (const g of graphs) for (let i = 0; i < 5; i++) await call(g);
const times = new Map(graphs.map((g) => [g.T, { after: [], repeated: [] }]));
for (let r = 0; r < rounds; r++) {
  for (const g of graphs) {
    if (g !== longest) await call(longest);
    times.get(g.T).after.push(await call(g));
    if (g !== longest) times.get(g.T).repeated.push(await call(g));
  }
}
const median = (x) => (x.length ? [...x].sort((a, b) => a - b)[x.length >> 1].toFixed(2) : '-');
console.log(`${manifest.name} ${manifest.quantization}, node ${process.version}, tfjs ${tf.version.tfjs} ${tf.getBackend()}, ${rounds} rounds`);
console.log('| bucket | ms after a longest call | ms repeated | vs longest |');
console.log('|---|---|---|---|');
const ref = Number(median(times.get(longest.T).after));
for (const [T, t] of times) console.log(`| ${T} | ${median(t.after)} | ${median(t.repeated)} | ${(ref / Number(median(t.after))).toFixed(2)}x |`);
