/**
 * The web page: the same core module as the app and the Node tests. By default it runs on LiteRT.js's wasm
 * accelerator (XNNPACK), on the TFLite export in ../../assets/model-tflite-buckets/ (one signature per length: the
 * fastest query of the page's runtimes, scripts/bench.ts); ?runtime=onnx runs onnxruntime-web's wasm backend on the
 * ONNX export in ../../assets/model-onnx/; ?runtime=tfjs runs TF.js's wasm backend on the TF.js export in
 * ../../assets/model/ (?backend=webgl: the WebGL backend, the browser twin of the app's rn-webgl; ?backend=cpu: plain
 * JS; either implies ?runtime=tfjs). The model, tokenizer, notes and their embeddings are fetched over HTTP from
 * ../../assets/ (override the model directory with ?model=URL-of-the-export-directory/).
 * Threads: a cross-origin isolated page (served with the COOP/COEP headers `npm run web` sends) runs each wasm
 * runtime on two threads where the machine has 4 logical cores or more (LiteRT.js's threaded build, onnxruntime-web's
 * and TF.js's thread pools), on one on a smaller machine; ?threads=N sets another count. Without the headers there is
 * no SharedArrayBuffer and every runtime runs one thread.
 * Build: node scripts/build-web.mjs; serve: npm run web.
 */
import * as tf from '@tensorflow/tfjs-core';
import '@tensorflow/tfjs-backend-cpu';
import '@tensorflow/tfjs-backend-webgl';
import { setThreadsCount, setWasmPaths } from '@tensorflow/tfjs-backend-wasm';
import { modelFileOf } from 'edgebert-runtime';

import { Embedder, type ModelFiles } from '../src/core/model';
import { litertRuntime, type LiteRtModule } from '../src/core/litert';
import { onnxWebRuntime, type OrtWebModule } from '../src/core/onnx';
import { NoteIndex, embedNotes } from '../src/core/search';
import type { ExportManifest, Note, NoteEmbeddings, SearchHit } from '../src/core/types';

interface DemoState {
  ready: boolean;
  error: string | null;
  backend: string;
  /** The wasm threads the runtime was given (1 unless the page is cross-origin isolated). */
  threads: number;
  model: string;
  loadMs: number;
  /** Time of every search (tokenise + model + rank the notes), milliseconds. */
  queryMs: number[];
  lastHits: { id: string; score: number }[];
}

declare global {
  interface Window {
    edgebertDemo: DemoState;
  }
}

const state: DemoState = { ready: false, error: null, backend: '', threads: 1, model: '', loadMs: 0, queryMs: [], lastHits: [] };
window.edgebertDemo = state;

const $ = <T extends HTMLElement>(id: string): T => document.getElementById(id) as T;
const params = new URLSearchParams(location.search);
const assets = new URL('../../assets/', location.href);
/** The runtime setting (?runtime=litertjs | onnx | tfjs) and the export each runs by default. */
const RUNTIME_EXPORTS = { litertjs: 'model-tflite-buckets/', onnx: 'model-onnx/', tfjs: 'model/' } as const;
type RuntimeChoice = keyof typeof RUNTIME_EXPORTS;
const runtime = (params.get('runtime') ?? (params.has('backend') || params.has('buckets') ? 'tfjs' : 'litertjs')) as RuntimeChoice;
const modelBase = new URL(params.get('model') ?? RUNTIME_EXPORTS[runtime] ?? 'model/', assets);
/**
 * Wasm threads (?threads=N sets them): one where the page is not cross-origin isolated (no SharedArrayBuffer, so no
 * wasm threads); else two where the machine has a core to spare for the second (4 logical cores or more), one on a
 * 2-core machine, where the second thread waits for a core the browser and everything else also want (the page's
 * query was 1.16x slower on two threads than on one on a busy 2-core machine: benchmarks/README.md).
 */
function defaultThreads(isolated: boolean, cores: number): number {
  return isolated && cores >= 4 ? 2 : 1;
}
const threads = globalThis.crossOriginIsolated
  ? Math.max(1, Math.floor(Number(params.get('threads') ?? defaultThreads(true, navigator.hardwareConcurrency || 1))) || 1)
  : 1;

async function getJson<T>(url: URL): Promise<T> {
  const res = await fetch(url);
  if (!res.ok) throw new Error(`${url}: HTTP ${res.status} (run scripts/prepare.sh?)`);
  return (await res.json()) as T;
}

function render(hits: SearchHit[]): void {
  const list = $<HTMLOListElement>('results');
  list.replaceChildren(
    ...hits.map((h) => {
      const li = document.createElement('li');
      li.dataset.id = h.note.id;
      const score = document.createElement('span');
      score.className = 'score';
      score.textContent = h.score.toFixed(3);
      const title = document.createElement('span');
      title.className = 'title';
      title.textContent = h.note.title;
      const text = document.createElement('span');
      text.className = 'text';
      text.textContent = h.note.text;
      li.append(score, title, text);
      return li;
    }),
  );
}

/** The runtime setting's files: LiteRT.js, onnxruntime-web or TF.js; each runtime's wasm files sit next to main.js. */
async function runtimeFiles(manifest: ExportManifest): Promise<Pick<ModelFiles, 'source' | 'bucketSource' | 'runtime'>> {
  const here = new URL('./', location.href).href;
  const modelUrl = new URL(modelFileOf(manifest as Parameters<typeof modelFileOf>[0]), modelBase).href;
  if (runtime === 'onnx') {
    const ort = (await import('onnxruntime-web/wasm')) as unknown as OrtWebModule;
    return { runtime: await onnxWebRuntime(ort, modelUrl, here, threads) };
  }
  if (runtime === 'litertjs') {
    const litert = (await import('@litertjs/core')) as unknown as LiteRtModule;
    return { runtime: await litertRuntime(litert, modelUrl, here, threads) };
  }
  if (runtime !== 'tfjs') throw new Error(`?runtime=${runtime}: the page runs litertjs, onnx or tfjs`);
  setWasmPaths(here);
  setThreadsCount(threads); // used by TF.js's threaded build, which it loads only in a cross-origin isolated page
  const backend = params.get('backend') ?? 'wasm';
  if (!(await tf.setBackend(backend))) throw new Error(`the ${backend} backend failed to initialise`);
  await tf.ready();
  return {
    source: new URL('model.json', modelBase).href,
    // ?buckets=0: every query padded to the export's longest length (what a one-length export costs)
    bucketSource: params.get('buckets') === '0' ? undefined : (file) => new URL(file, modelBase).href,
  };
}

async function main(): Promise<void> {
  const start = performance.now();
  const [manifest, tokenizerJson, tokenizerConfig, notes, embeddings] = await Promise.all([
    getJson<ExportManifest>(new URL('edgebert.json', modelBase)),
    getJson<object>(new URL('tokenizer.json', modelBase)),
    getJson<object>(new URL('tokenizer_config.json', modelBase)),
    getJson<Note[]>(new URL('notes.json', assets)),
    getJson<NoteEmbeddings>(new URL('note_embeddings.json', assets)).catch(() => null),
  ]);
  const files = await runtimeFiles(manifest);
  const embedder = await Embedder.load({ manifest, tokenizerJson, tokenizerConfig, ...files });
  let noteVectors = embeddings;
  const mismatch = embeddings ? NoteIndex.mismatch(embedder, embeddings) : 'no precomputed note embeddings';
  if (mismatch || !noteVectors) {
    // Another export than the prepared one (?model=…): embed the notes here with it, so the ranking is meaningful.
    $('status').textContent = `${mismatch}: embedding the ${notes.length} notes in the page…`;
    noteVectors = await embedNotes(embedder, notes);
  }
  const index = new NoteIndex(embedder, notes, noteVectors);
  // The first execute of each graph compiles kernels (WebGL: shaders per shape): keep it out of the first query's time.
  for (const length of embedder.buckets) await embedder.embed(['a '.repeat(Math.max(1, length - 2))]);

  Object.assign(state, {
    ready: true,
    backend: runtime === 'tfjs' ? tf.getBackend() : embedder.runtimeName,
    threads,
    model: `${manifest.name} (${manifest.quantization}, ${manifest.model.layers} layers)`,
    loadMs: performance.now() - start,
  });
  $('status').textContent =
    `${state.model} on ${state.backend}: ready in ${(state.loadMs / 1000).toFixed(1)} s, ${notes.length} notes.`;

  const input = $<HTMLInputElement>('query');
  const button = $<HTMLButtonElement>('search');
  input.disabled = false;
  button.disabled = false;
  input.focus();
  $('form').addEventListener('submit', async (event) => {
    event.preventDefault();
    const query = input.value.trim();
    if (!query) return;
    button.disabled = true;
    try {
      const result = await index.search(query, 5);
      state.queryMs.push(result.embedMs + result.rankMs);
      state.lastHits = result.hits.map((h) => ({ id: h.note.id, score: h.score }));
      render(result.hits);
      $('status').textContent =
        `${state.model} on ${state.backend}: query embedded in ${result.embedMs.toFixed(0)} ms ` +
        `(${embedder.lastSeqLen} tokens padded), ranked in ${result.rankMs.toFixed(1)} ms.`;
    } finally {
      button.disabled = false;
    }
  });
}

main().catch((err: unknown) => {
  state.error = err instanceof Error ? err.message : String(err);
  $('status').textContent = `Error: ${state.error}`;
  console.error(err);
});
