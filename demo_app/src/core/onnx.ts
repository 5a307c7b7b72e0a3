/**
 * ONNX Runtime Web (wasm) as the demo's runtime: an edgebert ONNX export (`--target onnx`; dynamic length, so each
 * text runs at its own length, unpadded) through edgebert-runtime's onnxruntime adapter. The caller passes its
 * onnxruntime-web module (the page and Node import it themselves; the core imports no runtime package).
 */
import type { RuntimeFactory } from 'edgebert-runtime';
import { onnxruntime, type OrtSessionLike, type OrtTensorClass } from 'edgebert-runtime/onnxruntime';

export const ONNX_MODEL_FILE = 'model.onnx';
export const ONNX_RUNTIME_NAME = 'onnxruntime-web (wasm)';

/** What the demo uses of the onnxruntime-web module. */
export interface OrtWebModule {
  env: { wasm: { numThreads?: number; wasmPaths?: unknown } };
  InferenceSession: { create(model: Uint8Array | string, options?: object): Promise<OrtSessionLike> };
  Tensor: unknown;
}

/**
 * The runtime of an ONNX export on onnxruntime-web's wasm backend: `model` is the bytes or the URL of its
 * model.onnx; `wasmPaths` where the page serves ort's .wasm files; `threads` its intra-op threads (more than one
 * only in a cross-origin isolated page, where SharedArrayBuffer exists; onnxruntime-web falls back to one thread
 * elsewhere). onnxruntime-web sets its threads once per page or process, at its first session.
 */
export async function onnxWebRuntime(ort: OrtWebModule, model: Uint8Array | string, wasmPaths?: string, threads = 1): Promise<RuntimeFactory> {
  ort.env.wasm.numThreads = threads;
  if (wasmPaths) ort.env.wasm.wasmPaths = wasmPaths;
  const session = await ort.InferenceSession.create(model, { executionProviders: ['wasm'] });
  const name = threads > 1 ? `${ONNX_RUNTIME_NAME.slice(0, -1)}, ${threads} threads)` : ONNX_RUNTIME_NAME;
  return onnxruntime({ session, Tensor: ort.Tensor as OrtTensorClass, name });
}
