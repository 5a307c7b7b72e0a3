/**
 * The benchmark's transformers.js page (bundled by scripts/bench.ts with esbuild; transformers.js's web build on its
 * own onnxruntime-web, wasm, one thread or ?threads=N): the page's folder holds `model/` (an export laid out with
 * --layout transformers.js), `notes.json` and onnxruntime-web's wasm files. `window.benchSearch(query)` answers the ids of the
 * five best notes and the query's time in the page (pipeline on the text + rank the notes), as the demo page times
 * its own queries.
 */
import { env, pipeline } from '@huggingface/transformers';

import type { Note } from '../src/core/types';
import { ORT_WASM, TransformersJsSearch, type PipelineFunction, type TransformersJsManifest } from './transformers-js';

export interface BenchPageState {
  ready: boolean;
  error: string | null;
  backend: string;
  loadMs: number;
}

declare global {
  interface Window {
    benchPage: BenchPageState;
    benchSearch(query: string): Promise<{ ids: string[]; ms: number }>;
  }
}

const here = new URL('./', location.href);
const state: BenchPageState = { ready: false, error: null, backend: '', loadMs: 0 };
window.benchPage = state;

async function getJson<T>(file: string): Promise<T> {
  const response = await fetch(new URL(file, here));
  if (!response.ok) throw new Error(`${file}: HTTP ${response.status}`);
  return (await response.json()) as T;
}

async function main(): Promise<void> {
  const start = performance.now();
  env.allowLocalModels = true;
  env.allowRemoteModels = false;
  env.useBrowserCache = false;
  env.localModelPath = here.pathname;
  env.backends.onnx.wasm!.wasmPaths = { mjs: new URL(`${ORT_WASM}.mjs`, here).href, wasm: new URL(`${ORT_WASM}.wasm`, here).href };
  // ?threads=N: its onnxruntime-web's threads (a cross-origin isolated page), as the demo page's runtimes get them
  const threads = Number(new URLSearchParams(location.search).get('threads') ?? 1);
  env.backends.onnx.wasm!.numThreads = threads;
  const [manifest, notes] = await Promise.all([getJson<TransformersJsManifest>('model/edgebert.json'), getJson<Note[]>('notes.json')]);
  const search = await TransformersJsSearch.load(pipeline as unknown as PipelineFunction, 'model', manifest, notes);
  window.benchSearch = async (query) => {
    const t0 = performance.now();
    const ids = await search.search(query, 5);
    return { ids, ms: performance.now() - t0 };
  };
  const backend = `transformers.js (onnxruntime-web wasm, its ${ORT_WASM} build, ${manifest.target_details.transformers_js?.dtype}, ${threads === 1 ? 'one thread' : `${threads} threads`})`;
  Object.assign(state, { ready: true, backend, loadMs: performance.now() - start });
}

main().catch((err: unknown) => {
  state.error = err instanceof Error ? err.message : String(err);
});
