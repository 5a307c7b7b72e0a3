// TF.js exports against each other at one sequence length (Node, wasm backend, one thread): interleaved calls
// (A B C A B C ...) so that every export meets the same machine state, median ms per export and its ratio to the
// first. The bench times one export after another, so a load change between them moves its speed-up ratios
// (the small preset's TF.js ratio read 10.8x and 5.4x in two runs of the same shapes); this does not.
//   node benchmarks/suites/tfjs_call_compare.mjs [--seq-len 128] [--rounds 60] LABEL=EXPORT_DIR[@whole-shard] ...
// `@whole-shard`: load that export's graph with the map of every weight in its shard (a loader without
// `ownWeights`) instead of the weights its nodes name.
// Each export's longest graph (or its bucket of --seq-len) runs a sequence of real-looking ids of that length,
// read back as an app does (data()). Needs edgebert's TF.js runner packages (./install.sh).
import { createRequire } from 'node:module';

import { exportGraphs, loadGraph, outputNodes } from '../../edgebert/targets/tfjs/js/load_export.mjs';
import { timedCall } from './tfjs_timing.mjs';

const require = createRequire(new URL('../../edgebert/targets/tfjs/js/package.json', import.meta.url));
const tf = require('@tensorflow/tfjs');
require('@tensorflow/tfjs-backend-wasm');

function parseArgs(argv) {
  const opts = { seqLen: 128, rounds: 60, exports: [] };
  for (let i = 0; i < argv.length; i++) {
    if (argv[i] === '--seq-len') opts.seqLen = Number(argv[++i]);
    else if (argv[i] === '--rounds') opts.rounds = Number(argv[++i]);
    else if (argv[i].includes('=')) {
      const [label, spec] = argv[i].split(/=(.*)/s);
      const wholeShard = spec.endsWith('@whole-shard');
      opts.exports.push({ label, dir: wholeShard ? spec.slice(0, -'@whole-shard'.length) : spec, wholeShard });
    }
    else { console.error(`unknown argument ${argv[i]}`); process.exit(2); }
  }
  if (!opts.exports.length) {
    console.error('usage: node benchmarks/suites/tfjs_call_compare.mjs [--seq-len N] [--rounds N] LABEL=EXPORT_DIR ...');
    process.exit(2);
  }
  return opts;
}

// The export's graph for `seqLen` tokens (its bucket of that length, or its one fixed graph), loaded as the runner does.
async function load(dir, seqLen, wholeShard) {
  const graph = exportGraphs(dir).graphs.find((b) => b.seq_len === seqLen);
  if (!graph) { console.error(`${dir} has no ${seqLen}-token graph`); process.exit(2); }
  const [output] = outputNodes(dir, graph.model_file, ['sentence_embedding']);
  return { model: await loadGraph(tf, dir, graph.model_file, { wholeShard }), output };
}

// A T-token sequence of real-looking ids, every position attended.
async function call(graph, T) {
  const ids = new Int32Array(T);
  for (let i = 1; i < T - 1; i++) ids[i] = 1000 + ((i * 7919) % 19000);
  ids[0] = 101; ids[T - 1] = 102;
  return timedCall(tf, graph, ids);
}

const opts = parseArgs(process.argv.slice(2));
await tf.setBackend('wasm');
await tf.ready();
const items = [];
for (const e of opts.exports) items.push({ ...e, graph: await load(e.dir, opts.seqLen, e.wholeShard), times: [] });
for (const it of items) for (let i = 0; i < 5; i++) await call(it.graph, opts.seqLen);
for (let r = 0; r < opts.rounds; r++) for (const it of items) it.times.push(await call(it.graph, opts.seqLen));
const median = (x) => [...x].sort((a, b) => a - b)[x.length >> 1];
console.log(`node ${process.version}, tfjs ${tf.version.tfjs} ${tf.getBackend()}, seq ${opts.seqLen}, ${opts.rounds} interleaved rounds`);
console.log('| export | median ms | first / this |');
console.log('|---|---|---|');
const ref = median(items[0].times);
for (const it of items) console.log(`| ${it.label} | ${median(it.times).toFixed(2)} | ${(ref / median(it.times)).toFixed(2)}x |`);
