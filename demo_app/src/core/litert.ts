/**
 * LiteRT.js (`@litertjs/core`) as the demo's runtime: an edgebert TFLite export (`--target tflite`; with `--buckets`
 * one signature per length, each text on the smallest that holds it) on LiteRT.js's wasm accelerator (XNNPACK),
 * through edgebert-runtime's litertjs adapter. The caller passes its @litertjs/core module (the page and Node import
 * it themselves; the core imports no runtime package).
 *
 * Threads: with `threads` > 1 LiteRT.js loads its threaded wasm build (relaxed SIMD + SharedArrayBuffer, so a page
 * must be cross-origin isolated: served with COOP/COEP headers) and XNNPACK runs on that many threads; where the
 * threaded build cannot load (no relaxed SIMD, no SharedArrayBuffer), its one-thread build runs.
 */
import type { RuntimeFactory } from 'edgebert-runtime';
import { litertjs, type LiteRtModelLike, type LiteRtTensorClass, type LiteRtTensorLike } from 'edgebert-runtime/litertjs';

export const TFLITE_MODEL_FILE = 'model.tflite';

/** What the demo uses of the @litertjs/core module. */
export interface LiteRtModule {
  loadLiteRt(wasmDir: string, options?: { threads?: boolean }): Promise<unknown>;
  loadAndCompile(model: string | Uint8Array, options: { accelerator: 'wasm'; cpuOptions?: { numThreads: number } }): Promise<unknown>;
  Tensor: unknown;
}

/** LiteRT.js's wasm module, loaded once per page or process, and the threads it can run. */
let loaded: Promise<number> | undefined;

async function loadOnce(litert: LiteRtModule, wasmDir: string, threads: number): Promise<number> {
  if (threads > 1) {
    try {
      await litert.loadLiteRt(wasmDir, { threads: true });
      return threads;
    } catch {
      // no relaxed SIMD or no SharedArrayBuffer here: the one-thread build
    }
  }
  await litert.loadLiteRt(wasmDir);
  return 1;
}

/**
 * The runtime of a TFLite export on LiteRT.js's wasm accelerator: `model` is the bytes or the URL of its
 * model.tflite, `wasmDir` the directory (URL or path, ending in '/') holding LiteRT.js's wasm files, `threads` the
 * XNNPACK threads (1: LiteRT.js's one-thread build). LiteRT.js loads its wasm module once per page or process: the
 * first call's `threads` picks the build.
 */
export async function litertRuntime(litert: LiteRtModule, model: string | Uint8Array, wasmDir: string, threads = 1): Promise<RuntimeFactory> {
  loaded ??= loadOnce(litert, wasmDir, threads);
  const numThreads = Math.min(threads, await loaded);
  const compiled = (await litert.loadAndCompile(model, { accelerator: 'wasm', cpuOptions: { numThreads } })) as LiteRtModelLike<LiteRtTensorLike>;
  return litertjs({ model: compiled, Tensor: litert.Tensor as LiteRtTensorClass<LiteRtTensorLike> });
}
