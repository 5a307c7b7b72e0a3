/**
 * Query latency of an export with the shared core: Node (wasm backend) and/or headless Chromium (the web page).
 *   node --import tsx scripts/bench.ts [--model-dir DIR] [--onnx-dir DIR] [--tflite-dir DIR] [--transformers-js-dir DIR]
 *                                      [--runs 20] [--node] [--browser] [--threads 1,2] [--no-isolate] [--texts FILE]
 * DIR defaults to assets/model (TF.js), assets/model-onnx (ONNX) and assets/model-tflite-buckets (TFLite), each when
 * present; --transformers-js-dir is the same model's ONNX export written with --layout transformers.js. In Chromium the page
 * loads them through the test server's /ext/ mount. With exports beside the TF.js one, the runtimes run side by side
 * in one run: TF.js wasm with buckets and fixed, onnxruntime-web wasm (each text at its own length), LiteRT.js wasm
 * (XNNPACK; each bucket a signature of the TFLite file) and transformers.js (its pipeline and tokenizer; Node:
 * onnxruntime-node, Chromium: its own onnxruntime-web build), each query = tokenise + embed + rank the bundled notes,
 * and the five queries' top-5 notes are compared across them.
 * Chromium: the page is served as `npm run web` serves it, cross-origin isolated (COOP/COEP headers), so its wasm
 * runtimes may run threads; --threads 1,2 runs every runtime's page once per count (?threads=N; default: 1 and 2, one
 * block each), --no-isolate leaves the headers out (one thread: no SharedArrayBuffer).
 * --texts FILE (one text per line): Node runs --runs of its lines, evenly spaced over the file, once per mode
 * instead of the five queries below (e.g. STS-B sentences: the latency of a median-length sentence).
 * --signatures (with a TFLite export, instead of the queries): in Chromium, each LiteRT.js signature's run alone
 * (scripts/bench-litertjs-page.ts), the lengths interleaved round by round, back to back and after a 10 ms pause,
 * on --threads' first count; and which int8 kernels this browser gives XNNPACK (its relaxed dot product probe).
 * "Query latency" = tokenise + one execute of the [1, bucket] graph + read back (what search() waits for); with
 * buckets (the query padded to the smallest bucket that holds it) and fixed (padded to the longest length).
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { createRequire } from 'node:module';
import { fileURLToPath } from 'node:url';
import { performance } from 'node:perf_hooks';

import * as esbuild from 'esbuild';
import { chromium, type Page } from 'playwright-core';

import { NoteIndex, embedNotes } from '../src/core/search';
import type { Embedder } from '../src/core/model';
import { ASSETS_DIR, MODEL_DIR, loadEmbedder, loadLiteRtEmbedder, loadOnnxEmbedder, readManifest, readNotes, useBackend } from '../src/node';
import { ORT_WASM, TransformersJsSearch, type PipelineFunction, type TransformersJsManifest } from './transformers-js';
import { startServer } from './serve-web.mjs';

const SCRIPTS_DIR = path.dirname(fileURLToPath(import.meta.url));
const CHROMIUM_FLAGS = [
  '--headless', '--no-sandbox', '--disable-gpu', '--disable-background-networking', '--disable-component-update', '--disable-sync', '--no-first-run',
];

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

/** The exports of one model the runtimes run (a runtime whose export is absent is left out). */
interface Exports {
  tfjs: string;
  onnx?: string;
  tflite?: string;
  transformersJs?: string;
}

/** One runtime searching the notes: the ids of a query's k best notes (tokenise + embed + rank). */
interface NoteSearch {
  search(query: string, k: number): Promise<string[]>;
  dispose(): void | Promise<void>;
}

/** A search over the bundled notes, their vectors embedded by `embedder` itself (each runtime its own). */
async function searchWith(embedder: Embedder): Promise<NoteSearch> {
  const notes = readNotes(path.join(ASSETS_DIR, 'notes.json'));
  const index = new NoteIndex(embedder, notes, await embedNotes(embedder, notes));
  return { search: async (q, k) => (await index.search(q, k)).hits.map((h) => h.note.id), dispose: () => embedder.dispose() };
}

/** transformers.js's Node build (onnxruntime-node, one intra-op thread) on the --layout transformers.js export. */
async function transformersJsNode(dir: string): Promise<NoteSearch> {
  const { env, pipeline } = await import('@huggingface/transformers');
  env.allowRemoteModels = false; // the export's folder only
  const manifest = readManifest(dir) as unknown as TransformersJsManifest;
  const notes = readNotes(path.join(ASSETS_DIR, 'notes.json'));
  return TransformersJsSearch.load(pipeline as unknown as PipelineFunction, dir, manifest, notes, { intraOpNumThreads: 1, interOpNumThreads: 1 });
}

/** Whether this V8 validates a relaxed-SIMD instruction (LiteRT.js loads its relaxed-SIMD build then, else its SIMD one). */
function relaxedSimd(): boolean {
  const v128 = [0xfd, 0x0c, ...new Array(16).fill(0)];
  const body = [0x00, ...v128, ...v128, 0xfd, 0x80, 0x02, 0x0b]; // i8x16.relaxed_swizzle of two zero vectors
  const module = [0x00, 0x61, 0x73, 0x6d, 0x01, 0x00, 0x00, 0x00, 0x01, 0x05, 0x01, 0x60, 0x00, 0x01, 0x7b, 0x03, 0x02, 0x01, 0x00,
    0x0a, body.length + 2, 0x01, body.length, ...body];
  return WebAssembly.validate(new Uint8Array(module));
}

/** Whether every runtime ranks each query's top-5 notes as the first one does; the differences, named. */
function topFiveAgreement(tops: Record<string, string[][]>): string {
  const [first, ...others] = Object.keys(tops);
  const differ = QUERIES.flatMap((q, i) =>
    others.filter((o) => tops[o][i].join() !== tops[first][i].join()).map((o) => `"${q}": ${o} [${tops[o][i]}] vs ${first} [${tops[first][i]}]`),
  );
  return differ.length ? `  top-5 notes differ:\n    ${differ.join('\n    ')}` : `  top-5 notes of the ${QUERIES.length} queries: identical in every runtime (order included)`;
}

/** The runtimes Node runs on `exports`, by label. */
async function nodeSearches(exports: Exports): Promise<Record<string, NoteSearch>> {
  await useBackend('wasm');
  const searches: Record<string, NoteSearch> = {
    'tfjs wasm, buckets': await searchWith(await loadEmbedder(exports.tfjs)),
    'tfjs wasm, fixed': await searchWith(await loadEmbedder(exports.tfjs, { buckets: false })),
  };
  if (exports.onnx) searches['onnxruntime-web wasm'] = await searchWith(await loadOnnxEmbedder(exports.onnx));
  if (exports.tflite) searches['litertjs wasm'] = await searchWith(await loadLiteRtEmbedder(exports.tflite));
  if (exports.transformersJs) searches['transformers.js'] = await transformersJsNode(exports.transformersJs);
  return searches;
}

/**
 * The runtimes side by side in Node, interleaved query by query: TF.js wasm (buckets, fixed) on the TF.js export,
 * onnxruntime-web wasm on the ONNX export, LiteRT.js wasm on the TFLite one, transformers.js on onnxruntime-node.
 * A query = tokenise + embed + rank the notes.
 */
async function benchRuntimesNode(exports: Exports, runs: number): Promise<void> {
  const searches = await nodeSearches(exports);
  const ms: Record<string, number[]> = Object.fromEntries(Object.keys(searches).map((k) => [k, []]));
  const tops: Record<string, string[][]> = Object.fromEntries(Object.keys(searches).map((k) => [k, []]));
  for (const [label, s] of Object.entries(searches)) {
    for (const q of QUERIES) tops[label].push(await s.search(q, 5)); // also warms up
  }
  for (let i = 0; i < runs; i++) {
    for (const [label, s] of Object.entries(searches)) {
      const start = performance.now();
      await s.search(QUERIES[i % QUERIES.length], 5);
      ms[label].push(performance.now() - start);
    }
  }
  const notes = readNotes(path.join(ASSETS_DIR, 'notes.json')).length;
  console.log(`node ${process.version}, one thread each: query = tokenise + embed + rank ${notes} notes`);
  for (const [label, values] of Object.entries(ms)) console.log(`  ${label.padEnd(22)} ${summary(values, 2)}`);
  if (exports.tflite) {
    const build = relaxedSimd() ? 'relaxed-SIMD' : 'SIMD (no relaxed SIMD in this Node)';
    console.log(`  litertjs: @litertjs/core's ${build} wasm build, its loader script run as a worker's importScripts would`);
  }
  if (exports.transformersJs) console.log('  transformers.js: its Node build, onnxruntime-node (native CPU kernels, one intra-op thread)');
  console.log(topFiveAgreement(tops));
  for (const s of Object.values(searches)) await s.dispose();
}

/** Headless Chromium on `url` (served by `server`): the page, ready, or its error. */
async function openPage(url: string, ready: () => boolean): Promise<{ page: Page; close: () => Promise<void> }> {
  const browser = await chromium.launch({ executablePath: process.env.CHROMIUM ?? '/usr/bin/chromium', args: CHROMIUM_FLAGS });
  try {
    const page = await browser.newPage();
    await page.goto(url);
    await page.waitForFunction(ready, null, { timeout: 600_000 });
    return { page, close: () => browser.close() };
  } catch (err) {
    await browser.close();
    throw err;
  }
}

/** How the pages run: cross-origin isolated (threads possible) or not, and the wasm threads each runtime gets. */
interface PageSetting {
  isolate: boolean;
  threads: number;
}

function threadsText(threads: number): string {
  return threads === 1 ? 'one thread' : `${threads} threads`;
}

/** The demo page on one runtime (`query`: its URL parameters), the export `modelDir` mounted at /ext/. */
async function benchBrowser(modelDir: string, runs: number, setting: PageSetting, label: string, query: string): Promise<string[][]> {
  const server = await startServer({ port: 0, isolate: setting.isolate, ext: modelDir });
  try {
    const url = `${server.url}web/dist/index.html?model=/ext/${query}&threads=${setting.threads}`;
    const { page, close } = await openPage(url, () => window.edgebertDemo?.ready || !!window.edgebertDemo?.error);
    try {
      const state = await page.evaluate(() => window.edgebertDemo);
      if (state.error) throw new Error(state.error);
      const tops: string[][] = [];
      for (let i = 0; i < runs + QUERIES.length; i++) {
        await page.fill('#query', QUERIES[i % QUERIES.length]);
        await page.click('#search');
        await page.waitForFunction((n) => window.edgebertDemo.queryMs.length === n, i + 1, { timeout: 60_000 });
        if (i < QUERIES.length) tops.push((await page.evaluate(() => window.edgebertDemo.lastHits)).map((h) => h.id));
      }
      const { queryMs, backend, loadMs, threads } = await page.evaluate(() => window.edgebertDemo);
      const where = `${backend}${backend.includes('thread') ? '' : `, ${threadsText(threads)}`}${setting.isolate ? '' : ', not isolated'}`;
      console.log(`  ${label.padEnd(22)} ${where}: load ${(loadMs / 1000).toFixed(1)} s; query ${summary(queryMs.slice(QUERIES.length), 2)}`);
      return tops;
    } finally {
      await close();
    }
  } finally {
    await server.close();
  }
}

/** A folder with the transformers.js bench page bundled, its onnxruntime-web files, the export as model/ and the notes. */
async function transformersJsPage(exportDir: string): Promise<string> {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'edgebert-bench-transformers-js-'));
  await esbuild.build({
    entryPoints: [path.join(SCRIPTS_DIR, 'bench-transformers-js-page.ts')], bundle: true, format: 'esm', platform: 'browser',
    target: 'es2022', outfile: path.join(dir, 'page.js'), logLevel: 'error',
  });
  fs.writeFileSync(path.join(dir, 'index.html'), '<!doctype html><meta charset="utf-8"><script type="module" src="page.js"></script>');
  const transformers = createRequire(import.meta.url).resolve('@huggingface/transformers'); // its Node build, in dist/
  const ortDir = path.dirname(createRequire(transformers).resolve(`onnxruntime-web/${ORT_WASM}.wasm`)); // its own onnxruntime-web
  for (const ext of ['.mjs', '.wasm']) fs.symlinkSync(path.join(ortDir, ORT_WASM + ext), path.join(dir, ORT_WASM + ext));
  fs.symlinkSync(path.resolve(exportDir), path.join(dir, 'model'));
  fs.symlinkSync(path.join(ASSETS_DIR, 'notes.json'), path.join(dir, 'notes.json'));
  return dir;
}

/** transformers.js's web build in Chromium on the --layout transformers.js export, timed in its page as the demo page times. */
async function benchBrowserTransformersJs(exportDir: string, runs: number, setting: PageSetting, label: string): Promise<string[][]> {
  const dir = await transformersJsPage(exportDir);
  const server = await startServer({ port: 0, isolate: setting.isolate, ext: dir });
  try {
    const url = `${server.url}ext/index.html?threads=${setting.isolate ? setting.threads : 1}`;
    const { page, close } = await openPage(url, () => window.benchPage?.ready || !!window.benchPage?.error);
    try {
      const { error, backend, loadMs } = await page.evaluate(() => window.benchPage);
      if (error) throw new Error(`transformers.js page: ${error}`);
      const tops: string[][] = [];
      const ms: number[] = [];
      for (let i = 0; i < runs + QUERIES.length; i++) {
        const answer = await page.evaluate((q) => window.benchSearch(q), QUERIES[i % QUERIES.length]);
        if (i < QUERIES.length) tops.push(answer.ids);
        else ms.push(answer.ms);
      }
      console.log(`  ${label.padEnd(22)} ${backend}: load ${(loadMs / 1000).toFixed(1)} s; query ${summary(ms, 2)}`);
      return tops;
    } finally {
      await close();
    }
  } finally {
    await server.close();
    fs.rmSync(dir, { recursive: true, force: true });
  }
}

/** What XNNPACK makes of this browser's relaxed int8 dot product (bench-litertjs-page.ts's probe). */
function int8DotText(lanes: number[] | null): string {
  if (!lanes) return 'no relaxed SIMD: XNNPACK runs its 16-bit int8 kernels (i32x4.dot_i16x8_s)';
  const exact = [-65536, -98048, -98048, -130560];
  return lanes.every((x, i) => x === exact[i])
    ? `relaxed int8 dot product exact on XNNPACK's probe [${lanes}]: its relaxed dot product int8 kernels`
    : `relaxed int8 dot product saturates on XNNPACK's probe [${lanes}], exact [${exact}]: XNNPACK runs its 16-bit int8 kernels (i32x4.dot_i16x8_s)`;
}

/**
 * Each signature of a TFLite export on LiteRT.js in Chromium, run alone (no tokenising, no reading), the lengths
 * interleaved round by round: `runs` runs each, back to back and after a 10 ms pause.
 */
async function benchSignatures(tfliteDir: string, runs: number, threads: number): Promise<void> {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'edgebert-bench-litertjs-'));
  try {
    await esbuild.build({
      entryPoints: [path.join(SCRIPTS_DIR, 'bench-litertjs-page.ts')], bundle: true, format: 'esm', platform: 'browser',
      target: 'es2022', outfile: path.join(dir, 'page.js'), logLevel: 'error',
    });
    fs.writeFileSync(path.join(dir, 'index.html'), '<!doctype html><meta charset="utf-8"><script type="module" src="page.js"></script>');
    const wasmDir = path.join(path.dirname(createRequire(import.meta.url).resolve('@litertjs/core/package.json')), 'wasm');
    for (const f of fs.readdirSync(wasmDir)) fs.symlinkSync(path.join(wasmDir, f), path.join(dir, f));
    fs.symlinkSync(path.resolve(tfliteDir), path.join(dir, 'model'));
    const server = await startServer({ port: 0, isolate: true, ext: dir });
    try {
      const { page, close } = await openPage(`${server.url}ext/index.html?threads=${threads}`, () => window.signaturePage?.ready || !!window.signaturePage?.error);
      try {
        const state = await page.evaluate(() => window.signaturePage);
        if (state.error) throw new Error(`LiteRT.js page: ${state.error}`);
        const rounds = 10;
        const perRound = Math.max(1, Math.ceil(runs / rounds));
        const warm = await page.evaluate(([r, n]) => window.benchSignatures(r, n, 0), [rounds, perRound] as const);
        const paused = await page.evaluate(([r, n]) => window.benchSignatures(r, n, 10), [rounds, perRound] as const);
        console.log(`chromium, LiteRT.js wasm (${threadsText(state.threads)}), each signature's run alone (${rounds} interleaved rounds of ${perRound}):`);
        console.log(`  ${int8DotText(state.int8Dot)}`);
        for (const { key, length } of state.signatures) {
          console.log(`  length ${String(length).padStart(3)} (${key}): back to back ${summary(warm[key], 3)}; after a 10 ms pause ${summary(paused[key], 3)}`);
        }
      } finally {
        await close();
      }
    } finally {
      await server.close();
    }
  } finally {
    fs.rmSync(dir, { recursive: true, force: true });
  }
}

/** Every runtime in headless Chromium, one page after another, and whether their top-5 notes agree. */
async function benchRuntimesBrowser(exports: Exports, runs: number, setting: PageSetting): Promise<void> {
  if (!fs.existsSync(path.join(SCRIPTS_DIR, '..', 'web', 'dist', 'main.js'))) {
    console.error('web/dist is not built (the page Chromium loads): run npm run build:web, then bench again');
    process.exit(2);
  }
  const how = setting.isolate ? `cross-origin isolated, ${threadsText(setting.threads)} each` : 'not isolated, one thread each';
  console.log(`chromium, the web page (${how}): query = tokenise + embed + rank the notes`);
  const tops: Record<string, string[][]> = {
    'tfjs wasm, buckets': await benchBrowser(exports.tfjs, runs, setting, 'tfjs wasm, buckets', '&runtime=tfjs'),
    'tfjs wasm, fixed': await benchBrowser(exports.tfjs, runs, setting, 'tfjs wasm, fixed', '&runtime=tfjs&buckets=0'),
  };
  if (exports.onnx) tops['onnxruntime-web wasm'] = await benchBrowser(exports.onnx, runs, setting, 'onnxruntime-web wasm', '&runtime=onnx');
  if (exports.tflite) tops['litertjs wasm'] = await benchBrowser(exports.tflite, runs, setting, 'litertjs wasm', '&runtime=litertjs');
  if (exports.transformersJs) tops['transformers.js'] = await benchBrowserTransformersJs(exports.transformersJs, runs, setting, 'transformers.js');
  console.log(topFiveAgreement(tops));
}

/** The exports named on the command line, else the prepared ones in assets/ that are present. */
function exportsArg(): Exports {
  const dir = (name: string, fallback: string | undefined, file: string): string | undefined => {
    const chosen = arg(name) ?? fallback;
    if (!chosen) return undefined;
    if (arg(name) && !fs.existsSync(path.join(chosen, file))) throw new Error(`${name} ${chosen}: no ${file} there`);
    return fs.existsSync(path.join(chosen, file)) ? path.resolve(chosen) : undefined;
  };
  return {
    tfjs: path.resolve(arg('--model-dir') ?? MODEL_DIR),
    onnx: dir('--onnx-dir', path.join(ASSETS_DIR, 'model-onnx'), 'model.onnx'),
    tflite: dir('--tflite-dir', path.join(ASSETS_DIR, 'model-tflite-buckets'), 'model.tflite'),
    transformersJs: dir('--transformers-js-dir', undefined, 'config.json'),
  };
}

async function main(): Promise<void> {
  const exports = exportsArg();
  const runs = Number(arg('--runs') ?? 20);
  if (process.argv.includes('--signatures')) {
    if (!exports.tflite) throw new Error('--signatures needs a TFLite export (--tflite-dir DIR)');
    await benchSignatures(exports.tflite, runs, Number((arg('--threads') ?? '1').split(',')[0]));
    return;
  }
  const texts = readTexts(arg('--texts'), runs);
  const both = !process.argv.includes('--node') && !process.argv.includes('--browser');
  const m = readManifest(exports.tfjs);
  console.log(`${m.name}: ${m.model.layers} layers, hidden ${m.model.hidden_size}, ${m.quantization}, seq_len ${m.seq_len}`);
  const runtimes: Record<string, string> = { onnx: 'onnxruntime-web', tflite: 'LiteRT.js', transformersJs: 'transformers.js' };
  for (const [key, dir] of Object.entries(exports).slice(1)) {
    if (!dir) continue;
    const other = readManifest(dir);
    const lengths = other.target === 'onnx' ? 'dynamic' : (other.buckets?.map((b) => b.seq_len).join(',') ?? String(other.seq_len));
    console.log(`beside ${other.name} (${runtimes[key]}: ${other.target}, ${other.quantization}, lengths ${lengths})`);
  }
  if (both || process.argv.includes('--node')) {
    await benchNode(exports.tfjs, runs, texts);
    if (exports.onnx || exports.tflite || exports.transformersJs) await benchRuntimesNode(exports, runs);
  }
  if (both || process.argv.includes('--browser')) {
    const isolate = !process.argv.includes('--no-isolate');
    const counts = isolate ? (arg('--threads') ?? '1,2').split(',').map(Number) : [1];
    if (counts.some((n) => !Number.isInteger(n) || n < 1)) throw new Error(`--threads ${arg('--threads')}: thread counts ≥ 1, comma-separated`);
    for (const threads of counts) await benchRuntimesBrowser(exports, runs, { isolate, threads });
  }
}

main().catch((err) => {
  console.error(err instanceof Error ? err.stack : err);
  process.exit(1);
});
