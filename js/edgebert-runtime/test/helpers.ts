/**
 * The cases file the Python test (tests/test_js_runtime.py) writes: the exports it made and, per export, PyTorch's
 * outputs (runtimes that run here) or what the export's own Python runtime saw and returned (native-only runtimes).
 */
import assert from 'node:assert/strict';
import fs from 'node:fs';

export { cosine } from '../src/index.js';

export interface TorchCase {
  text: string;
  input_ids: number[];
  outputs: Record<string, number[] | number[][]>;
}

export interface TorchExport {
  name: string;
  runtime: 'onnxruntime-node' | 'tfjs-wasm' | 'litertjs';
  dir: string;
  task: string;
  buckets: number[];
  min_cosine: number;
  cases: TorchCase[];
}

export interface NativeExport {
  name: string;
  runtime: 'fast-tflite' | 'executorch';
  dir: string;
  task: string;
  native: Record<string, unknown>;
  calls: { text: string; inputs: number[][]; outputs: unknown[] }[];
}

/** An ONNX export laid out for transformers.js (tests/test_web.py): edgebert's runner's outputs per text, and for a
 * text longer than seq_len what the runner gives on the ids transformers.js feeds (cut without the final separator). */
export interface TransformersJsExport {
  name: string;
  runtime: 'transformers.js';
  dir: string;
  task: 'feature-extraction' | 'text-classification';
  seq_len: number;
  labels: string[];
  cases: (TorchCase & { cut?: { input_ids: number[]; outputs: Record<string, number[]> } })[];
}

export const CASES_ENV = 'EDGEBERT_RUNTIME_CASES';
export const ALLOW_SKIP = 'EDGEBERT_RUNTIME_ALLOW_SKIP';

const file = process.env[CASES_ENV];
const all: (TorchExport | NativeExport | TransformersJsExport)[] = file ? JSON.parse(fs.readFileSync(file, 'utf8')).exports : [];

/** The exports of the cases file that run on `runtime` (none without a cases file). */
export function exportsFor<T extends TorchExport | NativeExport | TransformersJsExport>(runtime: T['runtime']): T[] {
  return all.filter((e) => e.runtime === runtime) as T[];
}

export function assertClose(got: ArrayLike<number>, want: ArrayLike<number>, atol: number, what: string): void {
  assert.equal(got.length, want.length, `${what}: ${got.length} values, ${want.length} expected`);
  const worst = Math.max(...Array.from(got, (g, i) => Math.abs(g - want[i])));
  assert.ok(worst <= atol, `${what}: max abs diff ${worst} > ${atol}`);
}
