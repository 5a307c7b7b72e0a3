/**
 * The browser half of browser.test.ts, bundled by esbuild: `window.runExport` loads an export over HTTP and runs its
 * cases with edgebert-runtime on onnxruntime-web (wasm) or TF.js (wasm or WebGL backend), returning the results as JSON.
 */
import * as ort from 'onnxruntime-web';
import * as tf from '@tensorflow/tfjs-core';
import { GraphModel } from '@tensorflow/tfjs-converter';
import { setWasmPaths } from '@tensorflow/tfjs-backend-wasm';
import '@tensorflow/tfjs-backend-webgl';
import { Tensor as LiteRtTensor, loadAndCompile, loadLiteRt } from '@litertjs/core';

import { EdgeModel, modelFileOf, type ExportManifest, type RuntimeFactory } from '../../src/index.js';
import { litertjs } from '../../src/adapters/litertjs.js';
import { onnxruntime } from '../../src/adapters/onnxruntime.js';
import { tfjs } from '../../src/adapters/tfjs.js';
import { resultsOf, type CaseResult } from '../results.js';

export interface PageRequest {
  /** The export's URL, ending in '/'. */
  base: string;
  runtime: 'onnxruntime-web' | 'tfjs-wasm' | 'tfjs-webgl' | 'litertjs-wasm' | 'litertjs-webgpu';
  texts: string[];
}

export interface PageAnswer {
  runtime: string;
  lengths: readonly number[] | null;
  results: CaseResult[];
}

const MODULES = '/pkg/node_modules/';
let litert: Promise<unknown> | undefined;

async function getJson(url: string): Promise<object> {
  const response = await fetch(url);
  if (!response.ok) throw new Error(`${url}: HTTP ${response.status}`);
  return (await response.json()) as object;
}

async function runtimeFor(request: PageRequest, manifest: object): Promise<RuntimeFactory> {
  if (request.runtime === 'onnxruntime-web') {
    ort.env.wasm.wasmPaths = `${MODULES}onnxruntime-web/dist/`;
    ort.env.wasm.numThreads = 1;
    const session = await ort.InferenceSession.create(request.base + modelFileOf(manifest as ExportManifest), { executionProviders: ['wasm'] });
    return onnxruntime({ session, Tensor: ort.Tensor, name: 'onnxruntime-web' });
  }
  if (request.runtime === 'litertjs-wasm' || request.runtime === 'litertjs-webgpu') {
    litert ??= loadLiteRt(`${MODULES}@litertjs/core/wasm/`); // LiteRT.js's wasm files, from this origin
    await litert;
    const accelerator = request.runtime === 'litertjs-webgpu' ? 'webgpu' : 'wasm';
    if (accelerator === 'webgpu' && !(await navigator.gpu?.requestAdapter())) throw new Error('this browser has no WebGPU adapter');
    const model = await loadAndCompile(request.base + modelFileOf(manifest as ExportManifest), { accelerator, gpuOptions: { precision: 'fp32' } });
    return litertjs({ model, Tensor: LiteRtTensor });
  }
  const backend = request.runtime === 'tfjs-webgl' ? 'webgl' : 'wasm';
  setWasmPaths(`${MODULES}@tensorflow/tfjs-backend-wasm/dist/`);
  if (!(await tf.setBackend(backend))) throw new Error(`the TF.js ${backend} backend failed to start`);
  return tfjs({ tf, GraphModel }, { source: `${request.base}model.json`, bucketSource: (file) => `${request.base}${file}` });
}

async function runExport(request: PageRequest): Promise<PageAnswer> {
  const [manifest, tokenizerJson, tokenizerConfig] = await Promise.all(
    ['edgebert.json', 'tokenizer.json', 'tokenizer_config.json'].map((f) => getJson(request.base + f)),
  );
  const model = await EdgeModel.load({ manifest, tokenizerJson, tokenizerConfig, runtime: await runtimeFor(request, manifest) });
  try {
    return { runtime: model.runtime.name, lengths: model.lengths, results: await resultsOf(model, request.texts) };
  } finally {
    model.dispose();
  }
}

(window as unknown as { runExport: typeof runExport }).runExport = runExport;
