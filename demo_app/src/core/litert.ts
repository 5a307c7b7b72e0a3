/**
 * LiteRT.js (`@litertjs/core`) as the demo's runtime: an edgebert TFLite export (`--target tflite`; with `--buckets`
 * one signature per length, each text on the smallest that holds it) on LiteRT.js's wasm accelerator (XNNPACK, one
 * thread), through edgebert-runtime's litertjs adapter. The caller passes its @litertjs/core module (the page and
 * Node import it themselves; the core imports no runtime package).
 */
import type { RuntimeFactory } from 'edgebert-runtime';
import { litertjs, type LiteRtModelLike, type LiteRtTensorClass, type LiteRtTensorLike } from 'edgebert-runtime/litertjs';

export const TFLITE_MODEL_FILE = 'model.tflite';

/** What the demo uses of the @litertjs/core module. */
export interface LiteRtModule {
  loadLiteRt(wasmDir: string): Promise<unknown>;
  loadAndCompile(model: string | Uint8Array, options: { accelerator: 'wasm' }): Promise<unknown>;
  Tensor: unknown;
}

let loaded: Promise<unknown> | undefined;

/**
 * The runtime of a TFLite export on LiteRT.js's wasm accelerator: `model` is the bytes or the URL of its
 * model.tflite, `wasmDir` the directory (URL or path, ending in '/') holding LiteRT.js's wasm files. LiteRT.js loads
 * its wasm module once per page or process.
 */
export async function litertRuntime(litert: LiteRtModule, model: string | Uint8Array, wasmDir: string): Promise<RuntimeFactory> {
  loaded ??= litert.loadLiteRt(wasmDir);
  await loaded;
  const compiled = (await litert.loadAndCompile(model, { accelerator: 'wasm' })) as LiteRtModelLike<LiteRtTensorLike>;
  return litertjs({ model: compiled, Tensor: litert.Tensor as LiteRtTensorClass<LiteRtTensorLike> });
}
