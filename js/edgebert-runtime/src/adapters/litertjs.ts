/**
 * LiteRT.js adapter (`@litertjs/core`, Google's web runtime for `.tflite` files): an edgebert TFLite export in a
 * browser, on LiteRT.js's wasm accelerator (XNNPACK) or on WebGPU. The app loads LiteRT.js's wasm files (served from
 * its own origin: `node_modules/@litertjs/core/wasm/`), compiles the model and passes it with LiteRT.js's Tensor:
 *
 *   import { loadLiteRt, loadAndCompile, Tensor } from '@litertjs/core';
 *   await loadLiteRt('/litert-wasm/');
 *   const model = await loadAndCompile('/model/model.tflite', { accelerator: 'wasm' });   // or 'webgpu'
 *   const runtime = litertjs({ model, Tensor });
 *
 * Every bucket of the export is a signature of the one `.tflite` (the manifest's `buckets[].signature`: `seq_16`, …,
 * `serving_default` for the longest): all of them run, and a text runs on the smallest that holds it. Inputs and
 * outputs are matched to the manifest by name. `runtime.name` says where it runs: `litertjs (wasm)`,
 * `litertjs (wasm, 2 threads)` (the model compiled with `cpuOptions: { numThreads: 2 }`, on LiteRT.js's threaded
 * build), `litertjs (webgpu)`, or `litertjs (webgpu + wasm)` when LiteRT.js delegated part of the model to wasm (it
 * falls back to wasm entirely on a browser without JSPI: then the model's accelerator is `wasm`). A call makes one
 * LiteRT.js tensor, its `input_ids`: `attention_mask` and `token_type_ids` recur from text to text and are kept.
 */
import { requireTarget, type Bucket, type ExportInfo } from '../manifest.js';
import type { InputTensor, OutputArray, OutputTensor, Runtime, RuntimeFactory } from '../runtime.js';
import { namesTensor, tensorIndex } from './tensor-names.js';

/** LiteRT.js's TensorDetails (a signature's inputs and outputs). */
export interface LiteRtTensorDetails {
  readonly name: string;
  readonly dtype: string;
  readonly shape: ArrayLike<number>;
}

/** What the adapter uses of LiteRT.js's Tensor. */
export interface LiteRtTensorLike {
  readonly type: { dtype: string; layout: { dimensions: ArrayLike<number> } };
  data(): Promise<Float32Array | Int32Array | Uint8Array>;
  delete(): void;
}

/** What the adapter uses of LiteRT.js's SignatureRunner. */
export interface LiteRtSignatureLike<T extends LiteRtTensorLike> {
  getInputDetails(): readonly LiteRtTensorDetails[];
  getOutputDetails(): readonly LiteRtTensorDetails[];
  run(input: Record<string, T>): Promise<Record<string, T>>;
}

/** What the adapter uses of LiteRT.js's CompiledModel. */
export interface LiteRtModelLike<T extends LiteRtTensorLike> {
  readonly signatures: Record<string, LiteRtSignatureLike<T>>;
  readonly options?: { accelerator?: string; cpuOptions?: { numThreads?: number } };
  /** False when LiteRT.js delegated part of the model to wasm (JSPI browsers) instead of the accelerator asked for. */
  readonly isFullyAccelerated?: boolean;
  delete(): void;
}

export type LiteRtTensorClass<T extends LiteRtTensorLike> = new (data: Int32Array, shape: number[]) => T;

export interface LiteRtHandles<T extends LiteRtTensorLike> {
  model: LiteRtModelLike<T>;
  Tensor: LiteRtTensorClass<T>;
}

const NAME = 'litertjs';

/** One bucket's signature, its inputs in the manifest's order and its outputs, by their names in the signature. */
interface BucketRunner<T extends LiteRtTensorLike> {
  signature: LiteRtSignatureLike<T>;
  inputNames: string[];
  outputNames: string[];
}

function shapeOf(dimensions: ArrayLike<number>): number[] {
  return Array.from(dimensions);
}

function bucketRunner<T extends LiteRtTensorLike>(model: LiteRtModelLike<T>, info: ExportInfo, bucket: Bucket): BucketRunner<T> {
  const key = bucket.signature ?? 'serving_default';
  const signature = model.signatures[key];
  if (!signature) throw new Error(`${NAME}: the model has no signature '${key}' (it has ${Object.keys(model.signatures).join(', ')}): is it ${info.name}'s model.tflite?`);
  const details = signature.getInputDetails();
  const inputNames = info.inputs.map(({ name, dtype }) => {
    const found = details.find((d) => namesTensor(d.name, name));
    if (!found) throw new Error(`${NAME}: signature '${key}' has no input '${name}' (it has ${details.map((d) => d.name).join(', ')})`);
    if (found.dtype !== dtype) throw new Error(`${NAME}: input '${found.name}' is ${found.dtype}, the manifest says ${dtype}`);
    const shape = shapeOf(found.shape);
    if (shape.length !== 2 || shape[0] !== 1 || shape[1] !== bucket.seqLen) {
      throw new Error(`${NAME}: input '${found.name}' of signature '${key}' has shape [${shape}], the manifest says [1, ${bucket.seqLen}]`);
    }
    return found.name;
  });
  if (details.length !== inputNames.length) throw new Error(`${NAME}: signature '${key}' takes ${details.length} inputs, the manifest lists ${inputNames.length}`);
  const outputNames = signature.getOutputDetails().map((d) => d.name);
  info.taskOutputs.forEach((o) => tensorIndex(outputNames, o, `${NAME} (signature '${key}')`));
  return { signature, inputNames, outputNames };
}

async function outputOf(tensor: LiteRtTensorLike, name: string): Promise<OutputTensor> {
  const data = await tensor.data();
  if (!(data instanceof Float32Array || data instanceof Int32Array)) throw new Error(`${NAME}: output '${name}' is ${tensor.type.dtype}; float32 or int32 expected`);
  return { data: data as OutputArray, shape: shapeOf(tensor.type.layout.dimensions) };
}

/**
 * The inputs whose values recur from text to text, `attention_mask` and `token_type_ids` (a handful of patterns per
 * length), kept as LiteRT.js tensors across calls instead of made and deleted each time: a call then makes one input
 * tensor, its `input_ids`. LiteRT.js reads its inputs and never writes them. At most `limit` are kept (then all are
 * deleted and the cache starts again).
 */
class RecurringInputs<T extends LiteRtTensorLike> {
  private readonly kept = new Map<string, T>();

  constructor(
    private readonly make: (data: Int32Array, shape: number[]) => T,
    private readonly limit = 256,
  ) {}

  get(name: string, data: Int32Array, shape: number[]): T {
    const key = `${name}:${data.join(',')}`;
    let tensor = this.kept.get(key);
    if (!tensor) {
      if (this.kept.size >= this.limit) this.clear();
      tensor = this.make(Int32Array.from(data), shape);
      this.kept.set(key, tensor);
    }
    return tensor;
  }

  clear(): void {
    this.kept.forEach((t) => t.delete());
    this.kept.clear();
  }
}

const RECURRING: readonly string[] = ['attention_mask', 'token_type_ids'];

/** The adapter: `litertjs({ model, Tensor })` → a RuntimeFactory for EdgeModel.load. */
export function litertjs<T extends LiteRtTensorLike>({ model, Tensor }: LiteRtHandles<T>): RuntimeFactory {
  return (info: ExportInfo): Runtime => {
    requireTarget(info, 'tflite', `the ${NAME} adapter`);
    const buckets = info.buckets ?? [{ seqLen: info.seqLen }];
    const runners = new Map(buckets.map((b) => [b.seqLen, bucketRunner(model, info, b)]));
    const accelerator = model.options?.accelerator;
    const partly = accelerator && accelerator !== 'wasm' && model.isFullyAccelerated === false ? ' + wasm' : '';
    const threads = accelerator === 'wasm' ? (model.options?.cpuOptions?.numThreads ?? 1) : 1;
    const threaded = threads > 1 ? `, ${threads} threads` : '';
    const recurring = new RecurringInputs<T>((data, shape) => new Tensor(data, shape));
    return {
      name: accelerator ? `${NAME} (${accelerator}${partly}${threaded})` : NAME,
      lengths: [...runners.keys()].sort((a, b) => a - b),
      async run(inputs: InputTensor[], outputs: readonly string[]) {
        const length = inputs[0].shape[1];
        const runner = runners.get(length);
        if (!runner) throw new Error(`${NAME}: no signature for length ${length} (the export's: ${[...runners.keys()].join(', ')})`);
        const made: T[] = [];
        const feeds: Record<string, T> = {};
        inputs.forEach((input, k) => {
          if (!(input.data instanceof Int32Array)) throw new Error(`${NAME}: input '${input.name}' is ${input.dtype}; TFLite exports take int32`);
          const shape = [...input.shape];
          if (RECURRING.includes(input.name)) {
            feeds[runner.inputNames[k]] = recurring.get(input.name, input.data, shape);
          } else {
            const tensor = new Tensor(input.data, shape);
            made.push(tensor);
            feeds[runner.inputNames[k]] = tensor;
          }
        });
        let results: Record<string, T> = {};
        try {
          results = await runner.signature.run(feeds);
          const named: Record<string, OutputTensor> = {};
          for (const o of outputs) named[o] = await outputOf(results[runner.outputNames[tensorIndex(runner.outputNames, o, NAME)]], o);
          return named;
        } finally {
          made.forEach((t) => t.delete());
          Object.values(results).forEach((t) => t.delete());
        }
      },
      dispose() {
        recurring.clear();
        model.delete();
      },
    };
  };
}
