/**
 * edgebert-runtime in headless Chromium (Debian `chromium`, driven by playwright-core): the ONNX exports of the
 * cases file on onnxruntime-web (wasm) and the TF.js exports on TF.js's wasm and WebGL backends (WebGL on Chromium's
 * software GPU, SwiftShader: float32 shaders), against PyTorch, with the same checks as in Node.
 * CHROMIUM=/path/to/chromium overrides /usr/bin/chromium.
 */
import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';
import { fileURLToPath } from 'node:url';

import * as esbuild from 'esbuild';
import { chromium, type Browser, type Page } from 'playwright-core';

import { exportsFor, type TorchExport } from '../helpers.js';
import { checkResults } from '../torch-runtimes.js';
import type { PageAnswer, PageRequest } from './page.js';
import { serve, type Server } from './server.js';

const CHROMIUM = process.env.CHROMIUM ?? '/usr/bin/chromium';
const PACKAGE = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..', '..');
const RUNTIMES: Record<string, PageRequest['runtime'][]> = { 'onnxruntime-node': ['onnxruntime-web'], 'tfjs-wasm': ['tfjs-wasm', 'tfjs-webgl'] };
const NAMES: Record<PageRequest['runtime'], string> = { 'onnxruntime-web': 'onnxruntime-web', 'tfjs-wasm': 'tfjs (wasm)', 'tfjs-webgl': 'tfjs (webgl)' };
// WebGL without a GPU: SwiftShader (software Vulkan under ANGLE), as in the demo app's browser test.
const FLAGS = ['--headless', '--no-sandbox', '--no-first-run', '--use-gl=angle', '--use-angle=swiftshader', '--enable-unsafe-swiftshader'];
const exports = [...exportsFor<TorchExport>('onnxruntime-node'), ...exportsFor<TorchExport>('tfjs-wasm')];

async function bundle(dir: string): Promise<void> {
  await esbuild.build({
    entryPoints: [path.join(PACKAGE, 'test', 'browser', 'page.ts')],
    bundle: true, format: 'esm', platform: 'browser', target: 'es2022', outfile: path.join(dir, 'page.js'), logLevel: 'error',
  });
  fs.writeFileSync(path.join(dir, 'index.html'), '<!doctype html><meta charset="utf-8"><script type="module" src="page.js"></script>');
}

describe('headless Chromium vs PyTorch', { skip: exports.length ? false : 'no exports in the cases file' }, () => {
  let server: Server;
  let browser: Browser;
  let page: Page;
  let dir: string;
  const console_: string[] = [];

  before(async () => {
    assert.ok(fs.existsSync(CHROMIUM), `no Chromium at ${CHROMIUM}: apt-get install chromium (or set CHROMIUM=...)`);
    dir = fs.mkdtempSync(path.join(os.tmpdir(), 'edgebert-runtime-page-'));
    await bundle(dir);
    const mounts: Record<string, string> = { '/page/': dir, '/pkg/': PACKAGE };
    exports.forEach((e, i) => (mounts[`/exports/${i}/`] = e.dir));
    server = await serve(mounts);
    browser = await chromium.launch({ executablePath: CHROMIUM, args: FLAGS });
    page = await browser.newPage();
    page.on('console', (m) => console_.push(`${m.type()}: ${m.text()}`));
    page.on('pageerror', (e) => console_.push(`pageerror: ${e.message}`));
    await page.goto(`${server.url}page/index.html`);
    await page.waitForFunction(() => 'runExport' in window, undefined, { timeout: 60_000 });
  });

  after(async () => {
    await browser?.close();
    await server?.close();
    if (dir) fs.rmSync(dir, { recursive: true, force: true });
  });

  exports.forEach((exp, i) => {
    for (const runtime of RUNTIMES[exp.runtime]) {
      test(`${exp.name} on ${runtime}`, async () => {
        const request: PageRequest = { base: `/exports/${i}/`, runtime, texts: exp.cases.map((c) => c.text) };
        const answer = await page
          .evaluate((r) => (window as unknown as { runExport: (r: PageRequest) => Promise<PageAnswer> }).runExport(r), request)
          .catch((err: Error) => assert.fail(`${err.message}\n${console_.join('\n')}`));
        assert.equal(answer.runtime, NAMES[runtime]);
        checkResults(exp, answer.results, answer.lengths);
      });
    }
  });
});
