/**
 * The browser half of browser.test.ts, bundled by esbuild (transformers.js's web build, on its own onnxruntime-web):
 * `window.runPipeline` loads an export served under /models/ with `pipeline(task, name)` as the export summary
 * prints it, and returns what it computes as JSON. onnxruntime-web's wasm files come from node_modules over the same
 * server (transformers.js would fetch them from a CDN otherwise).
 */
import { env, pipeline } from '@huggingface/transformers';

import { pipelineResults, type PipelineResult, type TextPipeline } from './results.js';

export interface PipelineRequest {
  name: string;
  task: 'feature-extraction' | 'text-classification';
  texts: string[];
  options: object;
}

export interface PipelineAnswer {
  device: string;
  results: PipelineResult[];
}

const ORT = '/pkg/node_modules/@huggingface/transformers/node_modules/onnxruntime-web/dist/ort-wasm-simd-threaded.asyncify';

env.allowLocalModels = true;
env.allowRemoteModels = false;
env.localModelPath = '/models/';
env.useBrowserCache = false;
env.backends.onnx.wasm!.wasmPaths = { mjs: `${ORT}.mjs`, wasm: `${ORT}.wasm` };
env.backends.onnx.wasm!.numThreads = 1;

async function runPipeline(request: PipelineRequest): Promise<PipelineAnswer> {
  const pipe = (await pipeline(request.task, request.name)) as TextPipeline;
  try {
    return { device: pipe.model.sessions.model.config.device, results: await pipelineResults(pipe, request.task, request.texts, request.options) };
  } finally {
    await pipe.dispose();
  }
}

(window as unknown as { runPipeline: typeof runPipeline }).runPipeline = runPipeline;
