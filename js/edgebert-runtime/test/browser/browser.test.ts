/**
 * edgebert-runtime in headless Chromium (Debian `chromium`, driven by playwright-core): the ONNX exports of the
 * cases file on onnxruntime-web (wasm), the TF.js exports on TF.js's wasm and WebGL backends (WebGL on Chromium's
 * software GPU, SwiftShader: float32 shaders) and the TFLite exports on LiteRT.js's wasm and WebGPU accelerators
 * (WebGPU on SwiftShader's Vulkan), against PyTorch, with the same checks as in Node (page and server: chromium.ts).
 */
import assert from 'node:assert/strict';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';

import { exportsFor, type TorchExport } from '../helpers.js';
import { checkResults } from '../torch-runtimes.js';
import { PACKAGE, openTestPage, type TestPage } from './chromium.js';
import type { PageAnswer, PageRequest } from './page.js';

const RUNTIMES: Record<string, PageRequest['runtime'][]> = {
  'onnxruntime-node': ['onnxruntime-web'], 'tfjs-wasm': ['tfjs-wasm', 'tfjs-webgl'], litertjs: ['litertjs-wasm', 'litertjs-webgpu'],
};
const NAMES: Record<PageRequest['runtime'], string> = {
  'onnxruntime-web': 'onnxruntime-web', 'tfjs-wasm': 'tfjs (wasm)', 'tfjs-webgl': 'tfjs (webgl)',
  // LiteRT.js's WebGPU delegate has no GATHER_ND (one in the BERT embeddings of edgebert's .tflite): it runs 100 of
  // the embedder's 140 ops and hands the rest to wasm (model partitioning, Chromium having JSPI).
  'litertjs-wasm': 'litertjs (wasm)', 'litertjs-webgpu': 'litertjs (webgpu + wasm)',
};
// WebGL without a GPU: SwiftShader (software Vulkan under ANGLE), as in the demo app's browser test; WebGPU on
// SwiftShader's Vulkan too (Chromium exposes WebGPU on Linux only with --enable-unsafe-webgpu).
const FLAGS = ['--headless', '--no-sandbox', '--no-first-run', '--use-gl=angle', '--use-angle=swiftshader', '--enable-unsafe-swiftshader',
  '--enable-unsafe-webgpu', '--enable-features=Vulkan', '--use-vulkan=swiftshader', '--use-webgpu-adapter=swiftshader'];
const exports = [...exportsFor<TorchExport>('onnxruntime-node'), ...exportsFor<TorchExport>('tfjs-wasm'), ...exportsFor<TorchExport>('litertjs')];

describe('headless Chromium vs PyTorch', { skip: exports.length ? false : 'no exports in the cases file' }, () => {
  let page: TestPage;

  before(async () => {
    const mounts = Object.fromEntries(exports.map((e, i) => [`/exports/${i}/`, e.dir]));
    page = await openTestPage(path.join(PACKAGE, 'test', 'browser', 'page.ts'), 'runExport', mounts, FLAGS);
  });

  after(async () => {
    await page?.close();
  });

  exports.forEach((exp, i) => {
    for (const runtime of RUNTIMES[exp.runtime]) {
      test(`${exp.name} on ${runtime}`, async () => {
        const request: PageRequest = { base: `/exports/${i}/`, runtime, texts: exp.cases.map((c) => c.text) };
        const answer = await page.call<PageRequest, PageAnswer>(request);
        assert.equal(answer.runtime, NAMES[runtime]);
        checkResults(exp, answer.results, answer.lengths);
      });
    }
  });
});
