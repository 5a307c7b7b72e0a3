// Run an edgebert TF.js graph-model export in Node: the runtime half of `edgebert/targets/tfjs/exporter.py`.
//
// Reads one JSON request on stdin:
//   {"model_dir": "...", "inputs": {"input_ids": [[...]], "attention_mask": [[...]], "token_type_ids": [[...]]},
//    "mode": "run" | "time", "warmup": 2, "repeats": 10, "backend": "wasm" | "cpu", "encoding": "json" | "base64",
//    "model_file": "model.json" | "model-16.json" (a sequence-length bucket's graph; default model.json),
//    "outputs": ["logits"]}   (the signature keys to fetch; default sentence_embedding and last_hidden_state)
// and writes one JSON answer on stdout:
//   run:  {"backend", "outputs": {"sentence_embedding": [[...]], "last_hidden_state": [[[...]]]}}
//         (integer outputs such as fill-mask's top_ids come back as numbers too: float32 holds ids below 2^24)
//         (with "encoding": "base64": {"outputs": {key: {"shape": [...], "f32": "<base64 little-endian float32>"}}})
//   time: {"backend", "times_s": [...]}  (seconds per call over every row of `inputs`, measured here in Node,
//         the requested outputs read back flat as an app reads them)
// or, with "mode": "texts", what an app does per text (`edgebert bench`'s app-like latency of a TF.js export):
//   {"model_dir", "mode": "texts", "texts": [...], "runs": [["fixed", [0, 1, ...]], ["buckets", [0, 1, ...]], ...],
//    "warmup": 3, "outputs": [...]}
//   -> {"backend", "ids": [[...], ...] (each text's real token ids), "times": {mode: {"tokenize_s": [...],
//       "model_s": [...]}}} (per text, in text order): tokenized in JS (edgebert-runtime's EdgeTokenizer, as the demo
//       app does), padded to the export's longest length (fixed) or to the smallest bucket that holds the text
//       (buckets), then tensors in, execute and read back; after `warmup` untimed texts in each mode, the runs in
//       order (edgebert.bench.app_latency.schedule), each opened by one untimed call of its first text.
// Each row is one execute() of the static [1, seq_len] graph. Anything else tfjs prints goes to stderr.
// The graphs of one export's buckets list the same weight shard: it is decoded once and their graphs share it.
//
// `node run_tfjs.mjs --serve` keeps the process (and each loaded model) alive: one JSON request per stdin
// line, one JSON answer per stdout line, errors answered as {"error": "..."}; it ends when stdin closes.
//
// Install: npm ci --prefix edgebert/targets/tfjs/js   (pure JS + wasm from the npm registry; no tfjs-node), after
// js/edgebert-runtime is installed and built (./install.sh does both)

import path from 'node:path';
import { createRequire } from 'node:module';
import { performance } from 'node:perf_hooks';

import { exportGraphs, exportTokenizer, loadGraph, outputNodes } from './load_export.mjs';

// tfjs greets Node users on stdout; keep stdout for the JSON answer only.
const writeAnswer = process.stdout.write.bind(process.stdout);
console.log = (...args) => console.error(...args);
console.info = (...args) => console.error(...args);
process.stdout.write = (chunk, ...rest) => process.stderr.write(chunk, ...rest);

const DEFAULT_OUTPUT_KEYS = ['sentence_embedding', 'last_hidden_state'];

function readStdin() {
  return new Promise((resolve, reject) => {
    const chunks = [];
    process.stdin.on('data', (c) => chunks.push(c));
    process.stdin.on('end', () => resolve(Buffer.concat(chunks).toString('utf8')));
    process.stdin.on('error', reject);
  });
}

async function setBackend(tf, wanted) {
  if (wanted !== 'cpu') {
    try {
      const require = createRequire(import.meta.url);
      const wasm = await import('@tensorflow/tfjs-backend-wasm');
      const distDir = path.dirname(require.resolve('@tensorflow/tfjs-backend-wasm/dist/tfjs-backend-wasm.wasm'));
      wasm.setWasmPaths(distDir + path.sep);
      if (await tf.setBackend('wasm')) {
        await tf.ready();
        return 'wasm';
      }
    } catch (err) {
      console.error(`wasm backend unavailable (${err && err.message}); falling back to cpu`);
    }
  }
  await tf.setBackend('cpu');
  await tf.ready();
  return 'cpu';
}

function encodeOutputs(results, encoding, keys) {
  const outputs = {};
  keys.forEach((key, i) => {
    const rows = results.map((values) => values[i][0]); // drop each call's batch axis of 1
    if (encoding !== 'base64') {
      outputs[key] = rows;
      return;
    }
    const flat = Float32Array.from(rows.flat(Infinity));
    const shape = [rows.length];
    for (let level = rows[0]; Array.isArray(level); level = level[0]) shape.push(level.length);
    outputs[key] = { shape, f32: Buffer.from(flat.buffer).toString('base64') };
  });
  return outputs;
}

let tfModule = null;
let activeBackend = null;
const models = new Map(); // model_dir/model_file -> graph model
// One untimed call on a padded input right after loading: the first execute of a graph orders its nodes, and the
// first of an export packs each weight for XNNPACK (shared by its bucket graphs); an app warms up the same way.
function warmedUp(tf, model) {
  const feeds = {};
  for (const input of model.inputs) feeds[input.name] = tf.zeros(input.shape.map((d) => Math.max(d, 1)), 'int32');
  tf.dispose(model.execute(feeds));
  tf.dispose(Object.values(feeds));
  return model;
}

async function runtime(request) {
  if (!tfModule) {
    tfModule = await import('@tensorflow/tfjs');
    activeBackend = await setBackend(tfModule, request.backend || 'wasm');
  }
  return { tf: tfModule, backend: activeBackend };
}

async function graph(tf, modelDir, file = 'model.json') {
  const key = path.join(modelDir, file);
  if (!models.has(key)) models.set(key, warmedUp(tf, await loadGraph(tf, modelDir, file)));
  return models.get(key);
}

async function loaded(request) {
  const { tf, backend } = await runtime(request);
  const file = request.model_file || 'model.json';
  const keys = request.outputs || DEFAULT_OUTPUT_KEYS;
  return { tf, backend, model: await graph(tf, request.model_dir, file), keys, nodes: outputNodes(request.model_dir, file, keys) };
}

const ENCODED = { input_ids: 'inputIds', attention_mask: 'attentionMask', token_type_ids: 'tokenTypeIds' };

async function timeTexts(request) {
  const { tf, backend } = await runtime(request);
  const dir = request.model_dir;
  const keys = request.outputs || DEFAULT_OUTPUT_KEYS;
  const { graphs } = exportGraphs(dir);
  const byLength = new Map();
  for (const g of graphs) {
    byLength.set(g.seq_len, { model: await graph(tf, dir, g.model_file), nodes: outputNodes(dir, g.model_file, keys) });
  }
  const modes = [...new Set(request.runs.map(([mode]) => mode))];
  const { Tokenizer } = await import('@huggingface/tokenizers');
  const tokenizers = {};
  for (const mode of modes) tokenizers[mode] = exportTokenizer(Tokenizer, dir, { buckets: mode === 'buckets' });
  const once = async (text, mode) => {
    const start = performance.now();
    const encoded = tokenizers[mode].encode(text);
    const tokenized = performance.now();
    const { model, nodes } = byLength.get(encoded.inputIds.length);
    const feeds = {};
    for (const input of model.inputs) feeds[input.name] = tf.tensor2d(encoded[ENCODED[input.name]], [1, encoded.inputIds.length], 'int32');
    const result = model.execute(feeds, nodes);
    const out = Array.isArray(result) ? result : [result];
    await Promise.all(out.map((t) => t.data()));
    tf.dispose([...out, ...Object.values(feeds)]);
    return [(tokenized - start) / 1000, (performance.now() - tokenized) / 1000];
  };
  for (const text of request.texts.slice(0, request.warmup ?? 3)) for (const mode of modes) await once(text, mode);
  const times = Object.fromEntries(modes.map((m) => [m, { tokenize_s: [], model_s: [] }]));
  for (const [mode, indices] of request.runs) {
    await once(request.texts[indices[0]], mode);  // untimed: the call after the other mode's run
    for (const i of indices) [times[mode].tokenize_s[i], times[mode].model_s[i]] = await once(request.texts[i], mode);
  }
  return { backend, ids: request.texts.map((t) => tokenizers[modes[0]].ids(t)), times };
}

async function handle(request) {
  if (request.mode === 'texts') return timeTexts(request);
  const { tf, backend, model, keys, nodes } = await loaded(request);

  const names = Object.keys(request.inputs);
  const rows = request.inputs[names[0]].length;
  const feeds = [];
  for (let r = 0; r < rows; r++) {
    const feed = {};
    for (const name of names) {
      const row = request.inputs[name][r];
      feed[name] = tf.tensor2d(Int32Array.from(row), [1, row.length], 'int32');
    }
    feeds.push(feed);
  }

  // One call = every row through the graph (execute: the graphs are static, no control flow), results read back to
  // JS so the work has really finished. Timing reads them as an app does, flat (data()); run needs them nested.
  const call = async (read = 'array') => {
    const results = [];
    for (const feed of feeds) {
      const result = model.execute(feed, nodes);
      const out = Array.isArray(result) ? result : [result]; // one requested node: tfjs returns the tensor itself
      const values = await Promise.all(out.map((t) => t[read]()));
      out.forEach((t) => t.dispose());
      results.push(values);
    }
    return results;
  };

  let answer;
  if ((request.mode || 'run') === 'time') {
    for (let i = 0; i < (request.warmup ?? 1); i++) await call('data');
    const times = [];
    for (let i = 0; i < (request.repeats ?? 5); i++) {
      const start = performance.now();
      await call('data');
      times.push((performance.now() - start) / 1000);
    }
    answer = { backend, times_s: times };
  } else {
    const results = await call();
    const outputs = encodeOutputs(results, request.encoding, keys);
    answer = { backend, output_nodes: Object.fromEntries(keys.map((k, i) => [k, nodes[i]])), outputs };
  }
  for (const feed of feeds) Object.values(feed).forEach((t) => t.dispose());
  return answer;
}

async function serve() {
  const readline = await import('node:readline');
  const lines = readline.createInterface({ input: process.stdin, crlfDelay: Infinity });
  for await (const line of lines) {
    if (!line.trim()) continue;
    let answer;
    try {
      answer = await handle(JSON.parse(line));
    } catch (err) {
      console.error(err && err.stack ? err.stack : String(err));
      answer = { error: err && err.message ? err.message : String(err) };
    }
    writeAnswer(JSON.stringify(answer) + '\n');
  }
}

async function main() {
  if (process.argv.includes('--serve')) {
    await serve();
    return;
  }
  writeAnswer(JSON.stringify(await handle(JSON.parse(await readStdin()))));
}

main().catch((err) => {
  console.error(err && err.stack ? err.stack : String(err));
  process.exit(1);
});
