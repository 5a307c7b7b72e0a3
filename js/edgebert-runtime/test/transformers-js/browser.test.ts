/**
 * transformers.js's web build in headless Chromium (Debian `chromium`, driven by playwright-core) loading the same
 * exports served over HTTP under /models/<name>/, on its wasm backend, against edgebert's Python runner.
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

import { serve, type Server } from '../browser/server.js';
import { exportsFor, type TransformersJsExport } from '../helpers.js';
import { checkPipelineResults, describeDistance } from './check.js';
import type { PipelineAnswer, PipelineRequest } from './page.js';

const CHROMIUM = process.env.CHROMIUM ?? '/usr/bin/chromium';
const PACKAGE = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..', '..');
const FLAGS = ['--headless', '--no-sandbox', '--disable-gpu', '--disable-background-networking', '--disable-component-update',
  '--disable-sync', '--no-first-run'];
const exports = exportsFor<TransformersJsExport>('transformers.js');

async function bundle(dir: string): Promise<void> {
  await esbuild.build({
    entryPoints: [path.join(PACKAGE, 'test', 'transformers-js', 'page.ts')],
    bundle: true, format: 'esm', platform: 'browser', target: 'es2022', outfile: path.join(dir, 'page.js'), logLevel: 'error',
  });
  fs.writeFileSync(path.join(dir, 'index.html'), '<!doctype html><meta charset="utf-8"><script type="module" src="page.js"></script>');
}

if (exports.length) {
  describe('transformers.js in headless Chromium vs edgebert', () => {
    let server: Server;
    let browser: Browser;
    let page: Page;
    let dir: string;
    const console_: string[] = [];

    before(async () => {
      assert.ok(fs.existsSync(CHROMIUM), `no Chromium at ${CHROMIUM}: apt-get install chromium (or set CHROMIUM=...)`);
      dir = fs.mkdtempSync(path.join(os.tmpdir(), 'edgebert-transformers-js-page-'));
      await bundle(dir);
      const mounts: Record<string, string> = { '/page/': dir, '/pkg/': PACKAGE };
      exports.forEach((e, i) => (mounts[`/models/export-${i}/`] = e.dir));
      server = await serve(mounts);
      browser = await chromium.launch({ executablePath: CHROMIUM, args: FLAGS }); // a fresh temporary profile per launch
      page = await browser.newPage();
      page.on('console', (m) => console_.push(`${m.type()}: ${m.text()}`));
      page.on('pageerror', (e) => console_.push(`pageerror: ${e.message}`));
      await page.goto(`${server.url}page/index.html`);
      await page.waitForFunction(() => 'runPipeline' in window, undefined, { timeout: 60_000 });
    });

    after(async () => {
      await browser?.close();
      await server?.close();
      if (dir) fs.rmSync(dir, { recursive: true, force: true });
    });

    exports.forEach((exp, i) => {
      test(`${exp.name} on transformers.js (Chromium)`, async (t) => {
        const request: PipelineRequest = { name: `export-${i}`, task: exp.task, texts: exp.cases.map((c) => c.text), options: exp.pipeline_options };
        const answer = await page
          .evaluate((r) => (window as unknown as { runPipeline: (r: PipelineRequest) => Promise<PipelineAnswer> }).runPipeline(r), request)
          .catch((err: Error) => assert.fail(`${err.message}\n${console_.join('\n')}`));
        assert.equal(answer.device, 'wasm');
        t.diagnostic(describeDistance(exp, checkPipelineResults(exp, answer.results)));
      });
    });
  });
}
