/**
 * transformers.js's web build in headless Chromium (chromium.ts) loading the same exports served over HTTP under
 * /models/<name>/, on its wasm backend, against edgebert's Python runner.
 */
import assert from 'node:assert/strict';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';

import { transformersJsOptions, type ExportManifest } from '../../src/index.js';
import { readExportFiles } from '../../src/node.js';
import { PACKAGE, openTestPage, type TestPage } from '../browser/chromium.js';
import { exportsFor, type TransformersJsExport } from '../helpers.js';
import { checkPipelineResults, describeDistance } from './check.js';
import type { PipelineAnswer, PipelineRequest } from './page.js';

const FLAGS = ['--headless', '--no-sandbox', '--disable-gpu', '--disable-background-networking', '--disable-component-update',
  '--disable-sync', '--no-first-run'];
const exports = exportsFor<TransformersJsExport>('transformers.js');

if (exports.length) {
  describe('transformers.js in headless Chromium vs edgebert', () => {
    let page: TestPage;

    before(async () => {
      const mounts = Object.fromEntries(exports.map((e, i) => [`/models/export-${i}/`, e.dir]));
      page = await openTestPage(path.join(PACKAGE, 'test', 'transformers-js', 'page.ts'), 'runPipeline', mounts, FLAGS);
    });

    after(async () => {
      await page?.close();
    });

    exports.forEach((exp, i) => {
      test(`${exp.name} on transformers.js (Chromium)`, async (t) => {
        const options = transformersJsOptions(readExportFiles(exp.dir).manifest as ExportManifest); // as the export summary prints them
        const request: PipelineRequest = { name: `export-${i}`, task: exp.task, texts: exp.cases.map((c) => c.text), options };
        const answer = await page.call<PipelineRequest, PipelineAnswer>(request);
        assert.equal(answer.device, 'wasm');
        t.diagnostic(describeDistance(exp, checkPipelineResults(exp, answer.results)));
      });
    });
  });
}
