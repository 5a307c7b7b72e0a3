// Where one call of a TF.js export goes, kernel by kernel (Node, wasm backend, one thread): tf.profile over --calls
// calls of the export's graph for --seq-len tokens, summed per kernel name: count per call, ms per call.
//   node benchmarks/experiments/tfjs_profile_ops.mjs EXPORT_DIR [--seq-len 16] [--calls 50]
import { createRequire } from 'node:module';

import { exportGraphs, loadGraph, outputNodes } from '../../edgebert/targets/tfjs/js/load_export.mjs';
import { embedOnce } from '../suites/tfjs_timing.mjs';

const require = createRequire(new URL('../../edgebert/targets/tfjs/js/package.json', import.meta.url));
const tf = require('@tensorflow/tfjs');
require('@tensorflow/tfjs-backend-wasm');

const args = process.argv.slice(2);
const dir = args[0];
const flag = (name, fallback) => (args.includes(name) ? Number(args[args.indexOf(name) + 1]) : fallback);
const seqLen = flag('--seq-len', 16);
const calls = flag('--calls', 50);
await tf.setBackend('wasm');
await tf.ready();
const entry = exportGraphs(dir).graphs.find((b) => b.seq_len === seqLen);
if (!entry) { console.error(`${dir} has no ${seqLen}-token graph`); process.exit(2); }
const [output] = outputNodes(dir, entry.model_file, ['sentence_embedding']);
const graph = { model: await loadGraph(tf, dir, entry.model_file), output };
const ids = new Int32Array(seqLen);
for (let i = 1; i < seqLen - 1; i++) ids[i] = 1000 + ((i * 7919) % 19000);
ids[0] = 101; ids[seqLen - 1] = 102;
for (let i = 0; i < 10; i++) await embedOnce(tf, graph, ids);
const totals = new Map();
let wall = 0;
for (let c = 0; c < calls; c++) {
  const t0 = performance.now();
  const info = await tf.profile(async () => { await embedOnce(tf, graph, ids); });
  wall += performance.now() - t0;
  for (const k of info.kernels) {
    const t = totals.get(k.name) || { n: 0, ms: 0 };
    t.n += 1; t.ms += typeof k.kernelTimeMs === 'number' ? k.kernelTimeMs : 0;
    totals.set(k.name, t);
  }
}
const rows = [...totals.entries()].sort((a, b) => b[1].ms - a[1].ms);
const sum = rows.reduce((s, [, t]) => s + t.ms, 0) / calls;
console.log(`${dir}, seq ${seqLen}: ${calls} profiled calls, ${(wall / calls).toFixed(2)} ms a call profiled, kernels ${sum.toFixed(2)} ms, ${rows.reduce((s, [, t]) => s + t.n, 0) / calls} kernels a call`);
for (const [name, t] of rows) console.log(`${name.padEnd(22)} ${String(t.n / calls).padStart(5)} x  ${(t.ms / calls).toFixed(3)} ms`);
