/**
 * Query latency of an export with the shared core: Node (wasm backend) and/or headless Chromium (the web page).
 *   node --import tsx scripts/bench.ts [--model-dir DIR] [--runs 20] [--node] [--browser] [--isolate] [--texts FILE]
 * DIR defaults to assets/model. In Chromium the page loads DIR through the test server's /ext/ mount.
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

import { MODEL_DIR, loadEmbedder, readManifest, useBackend } from '../src/node';
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

async function benchBrowser(modelDir: string, runs: number, isolate: boolean, buckets: boolean): Promise<void> {
  const server = await startServer({ port: 0, isolate, ext: modelDir });
  const browser = await chromium.launch({
    executablePath: process.env.CHROMIUM ?? '/usr/bin/chromium',
    args: ['--headless', '--no-sandbox', '--disable-gpu', '--disable-background-networking', '--disable-component-update', '--disable-sync', '--no-first-run'],
  });
  try {
    const page = await browser.newPage();
    await page.goto(`${server.url}web/dist/index.html?model=/ext/${buckets ? '' : '&buckets=0'}`);
    await page.waitForFunction(() => window.edgebertDemo?.ready || window.edgebertDemo?.error, null, { timeout: 600_000 });
    const state = await page.evaluate(() => window.edgebertDemo);
    if (state.error) throw new Error(state.error);
    for (let i = 0; i < runs + 2; i++) {
      await page.fill('#query', QUERIES[i % QUERIES.length]);
      await page.click('#search');
      await page.waitForFunction((n) => window.edgebertDemo.queryMs.length === n, i + 1, { timeout: 60_000 });
    }
    const { queryMs, backend, loadMs } = await page.evaluate(() => window.edgebertDemo);
    const version = browser.version();
    const threads = isolate ? 'cross-origin isolated (threaded wasm)' : 'not isolated';
    const mode = buckets ? 'buckets' : 'fixed';
    console.log(`chromium ${version} ${backend}, ${threads}, ${mode}: load ${(loadMs / 1000).toFixed(1)} s; query ${summary(queryMs.slice(2))}`);
  } finally {
    await browser.close();
    await server.close();
  }
}

async function main(): Promise<void> {
  const modelDir = path.resolve(arg('--model-dir') ?? MODEL_DIR);
  const runs = Number(arg('--runs') ?? 20);
  const texts = readTexts(arg('--texts'), runs);
  const both = !process.argv.includes('--node') && !process.argv.includes('--browser');
  const m = readManifest(modelDir);
  console.log(`${m.name}: ${m.model.layers} layers, hidden ${m.model.hidden_size}, ${m.quantization}, seq_len ${m.seq_len}`);
  if (both || process.argv.includes('--node')) await benchNode(modelDir, runs, texts);
  if (both || process.argv.includes('--browser')) {
    if (!fs.existsSync(path.join(path.dirname(fileURLToPath(import.meta.url)), '..', 'web', 'dist', 'main.js'))) {
      console.error('web/dist is not built (the page Chromium loads): run npm run build:web, then bench again');
      process.exit(2);
    }
    for (const buckets of [true, false]) await benchBrowser(modelDir, runs, process.argv.includes('--isolate'), buckets);
  }
}

main().catch((err) => {
  console.error(err instanceof Error ? err.stack : err);
  process.exit(1);
});
