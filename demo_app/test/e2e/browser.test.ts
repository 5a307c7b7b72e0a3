/**
 * End to end in headless Chromium (Debian `chromium`, driven by playwright-core): the web page loads the export
 * with the shared core on its default runtime (LiteRT.js, wasm, on the student's TFLite export), we type a query and
 * see the expected top result. On TF.js (?runtime=tfjs, wasm) and on onnxruntime-web (?runtime=onnx, the same
 * student's ONNX export) the default page must find the same top-5 notes, in the same order; on TF.js's WebGL backend
 * (Chromium's software GPU, SwiftShader) the page must rank as on TF.js wasm, with the same scores. The page is served
 * as `npm run web` serves it, cross-origin isolated, so LiteRT.js and onnxruntime-web are checked on two wasm threads
 * (EDGEBERT_WEB_ISOLATE=0: without the headers, one thread).
 * CHROMIUM=/path/to/chromium overrides /usr/bin/chromium. Needs the exports and web/dist (scripts/prepare.sh).
 */
import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';

import { chromium, type Browser, type Page } from 'playwright-core';

import { APP_DIR } from '../../src/node';
import { NO_MODEL, failUnlessReady } from '../helpers';
import { startServer } from '../../scripts/serve-web.mjs';

const CHROMIUM = process.env.CHROMIUM ?? '/usr/bin/chromium';
const ISOLATE = process.env.EDGEBERT_WEB_ISOLATE !== '0';
const FLAGS = [
  '--headless',
  '--no-sandbox',
  '--disable-gpu',
  '--disable-background-networking',
  '--disable-component-update',
  '--disable-sync',
  '--no-first-run',
];
// WebGL without a GPU: Chromium's SwiftShader (software Vulkan under ANGLE), float32 shaders.
const WEBGL_FLAGS = ['--headless', '--no-sandbox', '--use-gl=angle', '--use-angle=swiftshader', '--enable-unsafe-swiftshader'];
// The page's runtimes other than TF.js, each on the same student's export for it (scripts/prepare.sh writes them),
// on two wasm threads where the page is cross-origin isolated (LiteRT.js's threaded build, onnxruntime-web's pool).
const OTHER_RUNTIMES = [
  { runtime: 'LiteRT.js (the default)', query: '?threads=2', target: 'TFLite', file: 'model-tflite-buckets/model.tflite', backend: 'litertjs (wasm)' },
  { runtime: 'onnxruntime-web', query: '?runtime=onnx&threads=2', target: 'ONNX', file: 'model-onnx/model.onnx', backend: 'onnxruntime-web (wasm)' },
];
const QUERIES = [
  { query: 'my bicycle tire is flat', top: 'bike' },
  { query: 'how often should I feed my sourdough starter?', top: 'sourdough' },
  { query: 'what to do about jet lag after a long flight', top: 'jetlag' },
];

function skipReason(): string | false {
  if (NO_MODEL) return NO_MODEL;
  if (!fs.existsSync(path.join(APP_DIR, 'web', 'dist', 'main.js'))) return 'web/dist is not built: run node scripts/build-web.mjs';
  return false;
}

failUnlessReady('web page in headless Chromium', skipReason());
describe('web page in headless Chromium', { skip: skipReason() }, () => {
  let server: { url: string; close: () => Promise<void> };
  let browser: Browser;
  let page: Page;
  const consoleLines: string[] = [];

  before(async () => {
    assert.ok(fs.existsSync(CHROMIUM), `no Chromium at ${CHROMIUM}: run scripts/install.sh (apt-get install chromium)`);
    server = await startServer({ port: 0, isolate: ISOLATE });
    browser = await chromium.launch({ executablePath: CHROMIUM, args: FLAGS });
    page = await browser.newPage();
    page.on('console', (m) => consoleLines.push(`${m.type()}: ${m.text()}`));
    page.on('pageerror', (e) => consoleLines.push(`pageerror: ${e.message}`));
  });

  after(async () => {
    await browser?.close();
    await server?.close();
  });

  /** Load the page in `on` (with `query` appended to its URL, e.g. ?backend=webgl) and wait until it is ready. */
  async function open(on: Page, query: string, timeout: number): Promise<void> {
    await on.goto(`${server.url}web/dist/index.html${query}`);
    try {
      await on.waitForFunction(() => window.edgebertDemo?.ready || window.edgebertDemo?.error, null, { timeout });
    } catch (err) {
      throw new Error(`the page never became ready; browser console:\n${consoleLines.join('\n')}`, { cause: err });
    }
    const state = await on.evaluate(() => window.edgebertDemo);
    assert.equal(state.error, null, `page error: ${state.error}\n${consoleLines.join('\n')}`);
  }

  /** The runtime name the page shows for `backend` (its one-thread name) with the threads the page gave it. */
  async function backendOf(on: Page, backend: string): Promise<string> {
    const threads = await on.evaluate(() => window.edgebertDemo.threads);
    return threads === 1 ? backend : `${backend.slice(0, -1)}, ${threads} threads)`;
  }

  /** Search `text` on a ready page: its hits (id, score), best first. */
  async function search(on: Page, text: string): Promise<{ id: string; score: number }[]> {
    const done = await on.evaluate(() => window.edgebertDemo.queryMs.length);
    await on.fill('#query', text);
    await on.click('#search');
    await on.waitForFunction((n) => window.edgebertDemo.queryMs.length === n + 1, done, { timeout: 120_000 });
    return on.evaluate(() => window.edgebertDemo.lastHits);
  }

  test('the WebGL backend (the app runs rn-webgl) ranks with the scores of wasm', { timeout: 600_000 }, async () => {
    const gl = await chromium.launch({ executablePath: CHROMIUM, args: WEBGL_FLAGS });
    try {
      const glPage = await gl.newPage();
      glPage.on('console', (m) => consoleLines.push(`webgl ${m.type()}: ${m.text()}`));
      await open(glPage, '?backend=webgl', 300_000);
      await open(page, '?runtime=tfjs', 300_000);
      assert.equal(await glPage.evaluate(() => window.edgebertDemo.backend), 'webgl');
      assert.equal(await page.evaluate(() => window.edgebertDemo.backend), 'wasm');
      for (const q of QUERIES) {
        const [onWebgl, onWasm] = [await search(glPage, q.query), await search(page, q.query)];
        assert.deepEqual(onWebgl.map((h) => h.id), onWasm.map((h) => h.id), `"${q.query}": webgl and wasm rank differently`);
        for (const [i, h] of onWebgl.entries()) {
          assert.ok(Math.abs(h.score - onWasm[i].score) < 1e-4, `"${q.query}" ${h.id}: webgl ${h.score}, wasm ${onWasm[i].score}`);
        }
      }
    } finally {
      await gl.close();
    }
  });

  /** The top-5 notes of each query on TF.js wasm, from a page of its own, once. */
  let tfjsTops: Promise<string[][]> | undefined;
  async function topsOnTfjs(): Promise<string[][]> {
    tfjsTops ??= (async () => {
      const tfjsPage = await browser.newPage();
      try {
        await open(tfjsPage, '?runtime=tfjs', 300_000);
        const tops: string[][] = [];
        for (const q of QUERIES) tops.push((await search(tfjsPage, q.query)).map((h) => h.id));
        return tops;
      } finally {
        await tfjsPage.close();
      }
    })();
    return tfjsTops;
  }

  for (const other of OTHER_RUNTIMES) {
    test(`${other.runtime} on the ${other.target} export finds the top-5 notes TF.js wasm finds`, { timeout: 600_000 }, async () => {
      assert.ok(fs.existsSync(path.join(APP_DIR, 'assets', other.file)), `no assets/${other.file}: run scripts/prepare.sh`);
      const otherPage = await browser.newPage();
      otherPage.on('console', (m) => consoleLines.push(`${other.query} ${m.type()}: ${m.text()}`));
      try {
        await open(otherPage, other.query, 300_000);
        assert.equal(await otherPage.evaluate(() => window.edgebertDemo.backend), await backendOf(otherPage, other.backend));
        const onTfjs = await topsOnTfjs();
        for (const [i, q] of QUERIES.entries()) {
          const hits = (await search(otherPage, q.query)).map((h) => h.id);
          assert.deepEqual(hits, onTfjs[i], `"${q.query}": ${other.runtime} and TF.js rank differently`);
          assert.equal(hits[0], q.top, `"${q.query}" on ${other.runtime} -> ${hits[0]}`);
        }
      } finally {
        await otherPage.close();
      }
    });
  }

  test('typing a query shows the expected top result', { timeout: 240_000 }, async () => {
    await open(page, '', 180_000);
    assert.equal(await page.evaluate(() => window.edgebertDemo.backend), await backendOf(page, 'litertjs (wasm)'));
    // the page's own choice of threads: two where it is cross-origin isolated on 4 logical cores or more, else one
    assert.equal(await page.evaluate(() => window.edgebertDemo.threads), ISOLATE && os.cpus().length >= 4 ? 2 : 1);

    for (const [i, q] of QUERIES.entries()) {
      await page.fill('#query', q.query);
      await page.click('#search');
      await page.waitForFunction((n) => window.edgebertDemo.queryMs.length === n, i + 1, { timeout: 60_000 });
      const topId = await page.getAttribute('#results li:first-child', 'data-id');
      const topTitle = await page.textContent('#results li:first-child .title');
      assert.equal(topId, q.top, `"${q.query}" -> ${topId} (${topTitle})`);
    }
    // A few more runs of the same query for a steadier latency figure.
    for (let i = 0; i < 5; i++) {
      const n = await page.evaluate(() => window.edgebertDemo.queryMs.length);
      await page.click('#search');
      await page.waitForFunction((m) => window.edgebertDemo.queryMs.length === m + 1, n, { timeout: 60_000 });
    }
    const { queryMs, loadMs, model, backend } = await page.evaluate(() => window.edgebertDemo);
    const sorted = [...queryMs].sort((a, b) => a - b);
    const median = sorted[Math.floor(sorted.length / 2)];
    console.log(
      `chromium ${backend}: ${model}: load ${(loadMs / 1000).toFixed(1)} s, query median ${median.toFixed(0)} ms ` +
        `(min ${sorted[0].toFixed(0)}, n=${sorted.length})`,
    );
  });
});
