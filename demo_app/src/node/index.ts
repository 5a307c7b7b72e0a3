/**
 * Node-only helpers around the shared core: a file IOHandler for the export directory, the wasm backend, and
 * loaders for the bundled assets. Used by the precompute script, the benchmarks and the Node tests.
 */
import fs from 'node:fs';
import path from 'node:path';
import vm from 'node:vm';
import { createRequire } from 'node:module';
import { fileURLToPath } from 'node:url';

import * as tf from '@tensorflow/tfjs-core';
import '@tensorflow/tfjs-backend-cpu';
import { setWasmPaths } from '@tensorflow/tfjs-backend-wasm';
import { fileGraphSource, readExportFiles } from 'edgebert-runtime/node';

import { Classifier } from '../core/classify';
import { Embedder, type ModelFiles } from '../core/model';
import { litertRuntime, type LiteRtModule } from '../core/litert';
import { onnxWebRuntime, type OrtWebModule } from '../core/onnx';
import type { ExportManifest, Note, NoteEmbeddings } from '../core/types';

export const APP_DIR = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..', '..');
export const ASSETS_DIR = path.join(APP_DIR, 'assets');
/** Where scripts/prepare.sh puts the export (EDGEBERT_DEMO_MODEL_DIR overrides, e.g. to try another export). */
export const MODEL_DIR = process.env.EDGEBERT_DEMO_MODEL_DIR
  ? path.resolve(process.env.EDGEBERT_DEMO_MODEL_DIR)
  : path.join(ASSETS_DIR, 'model');
/** The same model's ONNX export (prepare.sh writes it beside the TF.js one), for onnxruntime-web. */
export const ONNX_MODEL_DIR = path.join(MODEL_DIR, '..', 'model-onnx');

const readJson = <T>(file: string): T => JSON.parse(fs.readFileSync(file, 'utf8')) as T;

/** A graph's IOHandler reading its json and weight shards from disk (edgebert-runtime's, which edgebert's runner uses too). */
export { fileGraphSource as fileIOHandler };

/** Select the wasm backend (its .wasm files read from node_modules); 'cpu' is the slow pure-JS fallback. */
export async function useBackend(name: 'wasm' | 'cpu' = 'wasm'): Promise<string> {
  if (name === 'wasm') {
    const require = createRequire(import.meta.url);
    const dist = path.dirname(require.resolve('@tensorflow/tfjs-backend-wasm/dist/tfjs-backend-wasm.wasm'));
    setWasmPaths(dist + path.sep);
  }
  if (!(await tf.setBackend(name))) throw new Error(`the TF.js ${name} backend failed to initialise`);
  await tf.ready();
  return tf.getBackend();
}

export function modelPresent(modelDir = MODEL_DIR): boolean {
  return ['model.json', 'edgebert.json', 'tokenizer.json', 'tokenizer_config.json'].every((f) =>
    fs.existsSync(path.join(modelDir, f)),
  );
}

export function readManifest(modelDir = MODEL_DIR): ExportManifest {
  return readJson<ExportManifest>(path.join(modelDir, 'edgebert.json'));
}

/** The files of the export in `modelDir`, the model read through the file IOHandler (`buckets: false`: model.json only). */
export function readModelFiles(modelDir = MODEL_DIR, options: { buckets?: boolean } = {}): ModelFiles {
  if (!modelPresent(modelDir)) {
    throw new Error(`no TF.js export in ${modelDir}; run: bash scripts/prepare.sh`);
  }
  return {
    manifest: readManifest(modelDir),
    tokenizerJson: readJson<object>(path.join(modelDir, 'tokenizer.json')),
    tokenizerConfig: readJson<object>(path.join(modelDir, 'tokenizer_config.json')),
    source: fileGraphSource(modelDir),
    bucketSource: options.buckets === false ? undefined : (file) => fileGraphSource(modelDir, file),
  };
}

/**
 * Load the export in `modelDir` with the file IOHandler (call useBackend() first); `buckets: false` loads only
 * model.json, so every text is padded to the export's longest length.
 */
export async function loadEmbedder(modelDir = MODEL_DIR, options: { buckets?: boolean } = {}): Promise<Embedder> {
  return Embedder.load(readModelFiles(modelDir, options));
}

/** The runtimes the demo runs here: TF.js (wasm backend) on a TF.js export, onnxruntime-web (wasm) on an ONNX one. */
export type RuntimeChoice = 'tfjs' | 'onnx';

/** The export in `modelDir` with its model file (the one its manifest names), refused in one line without it. */
function exportWithModel(modelDir: string, what: string): ReturnType<typeof readExportFiles> {
  const files = readExportFiles(modelDir);
  if (!fs.existsSync(files.modelPath)) throw new Error(`no ${what} export in ${modelDir} (${path.basename(files.modelPath)} missing)`);
  return files;
}

/** Load the ONNX export in `modelDir` on onnxruntime-web's wasm backend (one thread). */
export async function loadOnnxEmbedder(modelDir: string): Promise<Embedder> {
  const { manifest, tokenizerJson, tokenizerConfig, modelPath } = exportWithModel(modelDir, 'ONNX');
  const ort = (await import('onnxruntime-web')) as unknown as OrtWebModule;
  const runtime = await onnxWebRuntime(ort, new Uint8Array(fs.readFileSync(modelPath)));
  return Embedder.load({ manifest: manifest as ExportManifest, tokenizerJson, tokenizerConfig, runtime });
}

/**
 * @litertjs/core's loader script evaluated as a worker's importScripts() would (Node has neither workers' globals
 * nor a document to add a <script> to): an Emscripten module that runs in Node, read as CommonJS, whose
 * ModuleFactory global LiteRT.js then calls (it logs that it found no WebGPU device: Node has none). The globals
 * live only while `load` runs (TF.js and onnxruntime-web would take a global `self` for a browser).
 */
async function withNodeImportScripts<T>(load: () => Promise<T>): Promise<T> {
  const g = globalThis as Record<string, unknown>;
  g.self = globalThis;
  g.importScripts = (url: string) => {
    const file = url.startsWith('file:') ? fileURLToPath(url) : url;
    const script = `(function (require, __dirname, __filename) {${fs.readFileSync(file, 'utf8')}\nreturn ModuleFactory;\n})`;
    g.ModuleFactory = vm.runInThisContext(script, { filename: file })(createRequire(file), path.dirname(file), file);
  };
  try {
    return await load();
  } finally {
    delete g.self;
    delete g.importScripts;
  }
}

/** Load the TFLite export in `modelDir` on LiteRT.js's wasm accelerator (every bucket signature of its file). */
export async function loadLiteRtEmbedder(modelDir: string): Promise<Embedder> {
  const { manifest, tokenizerJson, tokenizerConfig, modelPath } = exportWithModel(modelDir, 'TFLite');
  const litert = (await import('@litertjs/core')) as unknown as LiteRtModule;
  const wasmDir = path.join(path.dirname(createRequire(import.meta.url).resolve('@litertjs/core/package.json')), 'wasm') + path.sep;
  const runtime = await withNodeImportScripts(() => litertRuntime(litert, new Uint8Array(fs.readFileSync(modelPath)), wasmDir));
  return Embedder.load({ manifest: manifest as ExportManifest, tokenizerJson, tokenizerConfig, runtime });
}

/** Load the export in `modelDir` on `runtime` (TF.js: call useBackend() first). */
export async function loadEmbedderOn(runtime: RuntimeChoice, modelDir: string, options: { buckets?: boolean } = {}): Promise<Embedder> {
  return runtime === 'onnx' ? loadOnnxEmbedder(modelDir) : loadEmbedder(modelDir, options);
}

/** Load a text-classification export (edgebert export --target tfjs of a …ForSequenceClassification model). */
export async function loadClassifier(modelDir: string): Promise<Classifier> {
  return Classifier.load(readModelFiles(modelDir, { buckets: false }));
}

export function readNotes(file = path.join(ASSETS_DIR, 'notes.json')): Note[] {
  return readJson<Note[]>(file);
}

export function readNoteEmbeddings(file = path.join(ASSETS_DIR, 'note_embeddings.json')): NoteEmbeddings {
  return readJson<NoteEmbeddings>(file);
}

export { readJson };
