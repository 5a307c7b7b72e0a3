/**
 * Query latency of an export with the shared core: Node (wasm backend) and/or headless Chromium (the web page).
 *   node --import tsx scripts/bench.ts [--model-dir DIR] [--onnx-dir DIR] [--runs 20] [--node] [--browser] [--isolate] [--texts FILE]
 * DIR defaults to assets/model (TF.js) and assets/model-onnx (ONNX, when present). In Chromium the page loads
 * them through the test server's /ext/ mount. With an ONNX export beside the TF.js one, the runtimes run side by
 * side in one run: TF.js wasm with buckets and fixed, onnxruntime-web wasm (each text at its own length), each
 * query = tokenise + embed + rank the bundled notes, and the five queries' top-5 notes are compared across them.
 * --texts FILE (one text per line): Node runs --runs of its lines, evenly spaced over the file, once per mode
 * instead of the five queries below (e.g. STS-B sentences: the latency of a median-length sentence).
 * "Query latency" = tokenise + one execute of the [1, bucket] graph + read back (what search() waits for); with
 * buckets (the query padded to the smallest bucket that holds it) and fixed (padded to the longest length).
 */
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { performance } from 'node:perf_hooks';

import { chromium } from 'playwright-core';

import { NoteIndex, embedNotes } from '../src/core/search';
import type { Embedder } from '../src/core/model';
import { ASSETS_DIR, MODEL_DIR, loadEmbedder, loadOnnxEmbedder, readManifest, readNotes, useBackend } from '../src/node';
import { startServer } from './serve-web.mjs';

const QUERIES = [
  'how do I fix a flat tyre?',
  'my sourdough starter smells odd',
  'tips for sleeping better when travelling across time zones',
  'what is an index fund',
  'keep the cat healthy',
];

function arg(name: string): string | undefined {
  const i = process.argv.indexOf(name);
  return i > 0 ? process.argv[i + 1] : undefined;
}

function summary(values: number[], digits = 0, unit = ' ms'): string {
  const s = [...values].sort((a, b) => a - b);
  const q = (p: number) => s[Math.min(s.length - 1, Math.floor(p * s.length))].toFixed(digits) + unit;
  return `median ${q(0.5)}, p90 ${q(0.9)}, min ${s[0].toFixed(digits)}${unit} (n=${s.length})`;
}

function readTexts(file: string | undefined, runs: number): string[] {
  if (!file) return Array.from({ length: runs }, (_, i) => QUERIES[i % QUERIES.length]);
  const lines = fs.readFileSync(file, 'utf8').split('\n').map((l) => l.trim()).filter(Boolean);
  if (!lines.length) throw new Error(`--texts ${file} holds no text`);
  // Spread over the file, not its first lines (STS-B's first sentences are short captions): as edgebert bench does.
  if (lines.length <= runs) return lines;
  return Array.from({ length: runs }, (_, i) => lines[Math.floor((i * lines.length) / runs)]);
}

/**
 * Fixed vs buckets for the texts of the median token count ("a median-length sentence"): each text's ratio of its
 * two interleaved timings, and the median of those ratios (as `edgebert bench` reports it). Over all texts the
 * buckets' times mix a few graphs, and their median falls on whichever graph holds the middle text.
 */
function atMedianLength(tokens: number[], ms: Record<string, number[]>): string {
  const median = (x: number[]) => [...x].sort((a, b) => a - b)[x.length >> 1];
  const length = median(tokens);
  const at = tokens.flatMap((t, i) => (t === length ? [i] : []));
  const ratio = median(at.map((i) => ms.fixed[i] / ms.buckets[i]));
  const fixed = median(at.map((i) => ms.fixed[i]));
  const buckets = median(at.map((i) => ms.buckets[i]));
  return `  texts of the median length (${length} tokens, n=${at.length}): query median ${buckets.toFixed(1)} ms buckets, ${fixed.toFixed(1)} ms fixed; buckets vs fixed ${ratio.toFixed(2)}x (median of per-text ratios)`;
}

async function benchNode(modelDir: string, runs: number, texts: string[]): Promise<void> {
  const backend = await useBackend('wasm');
  const t0 = performance.now();
  const embedders = { buckets: await loadEmbedder(modelDir), fixed: await loadEmbedder(modelDir, { buckets: false }) };
  const loadMs = performance.now() - t0;
  const ms: Record<string, number[]> = { buckets: [], fixed: [] };
  for (const e of Object.values(embedders)) for (const length of e.buckets) await e.embed(['a '.repeat(Math.max(1, length - 2))]);
  for (const text of texts) {
    for (const [mode, e] of Object.entries(embedders)) { // interleaved: both modes see the same machine
      await e.embed([text]);
      ms[mode].push(e.lastEmbedMs);
    }
  }
  const tok: number[] = [];
  for (let i = 0; i < 200; i++) {
    const s = performance.now();
    embedders.buckets.tokenizer.encode(QUERIES[i % QUERIES.length]);
    tok.push(performance.now() - s);
  }
  const encoded = texts.map((q) => embedders.buckets.tokenizer.encode(q));
  const padded = encoded.map((e) => e.inputIds.length);
  const tokens = encoded.map((e) => e.length);
  const lengths = texts.length <= QUERIES.length ? padded.join('/') : `${summary(padded, 0, '')} (tokens: ${summary(tokens, 0, '')})`;
  console.log(`node ${process.version} ${backend}: load ${(loadMs / 1000).toFixed(1)} s (both); tokenise ${summary(tok, 2)}`);
  console.log(`  buckets ${embedders.buckets.buckets.join(',')} (queries padded to ${lengths}): query ${summary(ms.buckets, 1)}`);
  console.log(`  fixed ${embedders.fixed.buckets.join(',')}: query ${summary(ms.fixed, 1)}`);
  if (texts.length > QUERIES.length) console.log(atMedianLength(tokens, ms));
  Object.values(embedders).forEach((e) => e.dispose());
}

/** A search index over the bundled notes, their vectors embedded by `embedder` itself (each runtime its own). */
async function indexFor(embedder: Embedder): Promise<NoteIndex> {
  const notes = readNotes(path.join(ASSETS_DIR, 'notes.json'));
  return new NoteIndex(embedder, notes, await embedNotes(embedder, notes));
}

/** Whether every runtime ranks each query's top-5 notes as the first one does; the differences, named. */
function topFiveAgreement(tops: Record<string, string[][]>): string {
  const [first, ...others] = Object.keys(tops);
  const differ = QUERIES.flatMap((q, i) =>
    others.filter((o) => tops[o][i].join() !== tops[first][i].join()).map((o) => `"${q}": ${o} [${tops[o][i]}] vs ${first} [${tops[first][i]}]`),
  );
  return differ.length ? `  top-5 notes differ:\n    ${differ.join('\n    ')}` : `  top-5 notes of the ${QUERIES.length} queries: identical in every runtime (order included)`;
}

/**
 * The runtimes side by side in Node, interleaved query by query: TF.js wasm (buckets, fixed) on the TF.js export,
 * onnxruntime-web wasm on the ONNX export. A query = tokenise + embed + rank the notes (NoteIndex.search).
 */
async function benchRuntimesNode(tfjsDir: string, onnxDir: string, runs: number): Promise<void> {
  await useBackend('wasm');
  const embedders: Record<string, Embedder> = {
    'tfjs wasm, buckets': await loadEmbedder(tfjsDir),
    'tfjs wasm, fixed': await loadEmbedder(tfjsDir, { buckets: false }),
    'onnxruntime-web wasm': await loadOnnxEmbedder(onnxDir),
  };
  const indexes = Object.fromEntries(await Promise.all(Object.entries(embedders).map(async ([k, e]) => [k, await indexFor(e)] as const)));
  const ms: Record<string, number[]> = Object.fromEntries(Object.keys(indexes).map((k) => [k, []]));
  const tops: Record<string, string[][]> = Object.fromEntries(Object.keys(indexes).map((k) => [k, []]));
  for (const [label, index] of Object.entries(indexes)) {
    for (const q of QUERIES) tops[label].push((await index.search(q, 5)).hits.map((h) => h.note.id)); // also warms up
  }
  for (let i = 0; i < runs; i++) {
    for (const [label, index] of Object.entries(indexes)) {
      const start = performance.now();
      await index.search(QUERIES[i % QUERIES.length], 5);
      ms[label].push(performance.now() - start);
    }
  }
  const notes = Object.values(indexes)[0].notes.length;
  console.log(`node ${process.version}, one thread each: query = tokenise + embed + rank ${notes} notes`);
  for (const [label, values] of Object.entries(ms)) console.log(`  ${label.padEnd(22)} ${summary(values, 2)}`);
  console.log(topFiveAgreement(tops));
  Object.values(embedders).forEach((e) => e.dispose());
}

async function benchBrowser(modelDir: string, runs: number, isolate: boolean, label: string, query: string): Promise<string[][]> {
  const server = await startServer({ port: 0, isolate, ext: modelDir });
  const browser = await chromium.launch({
    executablePath: process.env.CHROMIUM ?? '/usr/bin/chromium',
    args: ['--headless', '--no-sandbox', '--disable-gpu', '--disable-background-networking', '--disable-component-update', '--disable-sync', '--no-first-run'],
  });
  try {
    const page = await browser.newPage();
    await page.goto(`${server.url}web/dist/index.html?model=/ext/${query}`);
    await page.waitForFunction(() => window.edgebertDemo?.ready || window.edgebertDemo?.error, null, { timeout: 600_000 });
    const state = await page.evaluate(() => window.edgebertDemo);
    if (state.error) throw new Error(state.error);
    const tops: string[][] = [];
    for (let i = 0; i < runs + QUERIES.length; i++) {
      await page.fill('#query', QUERIES[i % QUERIES.length]);
      await page.click('#search');
      await page.waitForFunction((n) => window.edgebertDemo.queryMs.length === n, i + 1, { timeout: 60_000 });
      if (i < QUERIES.length) tops.push((await page.evaluate(() => window.edgebertDemo.lastHits)).map((h) => h.id));
    }
    const { queryMs, backend, loadMs } = await page.evaluate(() => window.edgebertDemo);
    const threads = isolate ? 'cross-origin isolated (threaded wasm)' : 'not isolated';
    console.log(`  ${label.padEnd(22)} ${backend}, ${threads}: load ${(loadMs / 1000).toFixed(1)} s; query ${summary(queryMs.slice(QUERIES.length), 2)}`);
    return tops;
  } finally {
    await browser.close();
    await server.close();
  }
}

async function main(): Promise<void> {
  const modelDir = path.resolve(arg('--model-dir') ?? MODEL_DIR);
  const onnxDir = path.resolve(arg('--onnx-dir') ?? path.join(ASSETS_DIR, 'model-onnx'));
  const onnx = fs.existsSync(path.join(onnxDir, 'model.onnx'));
  const runs = Number(arg('--runs') ?? 20);
  const texts = readTexts(arg('--texts'), runs);
  const both = !process.argv.includes('--node') && !process.argv.includes('--browser');
  const m = readManifest(modelDir);
  console.log(`${m.name}: ${m.model.layers} layers, hidden ${m.model.hidden_size}, ${m.quantization}, seq_len ${m.seq_len}`);
  if (onnx) console.log(`beside ${readManifest(onnxDir).name} (onnx, ${readManifest(onnxDir).quantization})`);
  if (both || process.argv.includes('--node')) {
    await benchNode(modelDir, runs, texts);
    if (onnx) await benchRuntimesNode(modelDir, onnxDir, runs);
  }
  if (both || process.argv.includes('--browser')) {
    if (!fs.existsSync(path.join(path.dirname(fileURLToPath(import.meta.url)), '..', 'web', 'dist', 'main.js'))) {
      console.error('web/dist is not built (the page Chromium loads): run npm run build:web, then bench again');
      process.exit(2);
    }
    const isolate = process.argv.includes('--isolate');
    console.log(`chromium, the web page: query = tokenise + embed + rank the notes`);
    const tops: Record<string, string[][]> = {
      'tfjs wasm, buckets': await benchBrowser(modelDir, runs, isolate, 'tfjs wasm, buckets', ''),
      'tfjs wasm, fixed': await benchBrowser(modelDir, runs, isolate, 'tfjs wasm, fixed', '&buckets=0'),
    };
    if (onnx) tops['onnxruntime-web wasm'] = await benchBrowser(onnxDir, runs, isolate, 'onnxruntime-web wasm', '&runtime=onnx');
    console.log(topFiveAgreement(tops));
  }
}

main().catch((err) => {
  console.error(err instanceof Error ? err.stack : err);
  process.exit(1);
});
