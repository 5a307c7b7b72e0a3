/**
 * ONNX Runtime adapter: onnxruntime-node, onnxruntime-web and onnxruntime-react-native share the InferenceSession
 * API, so one adapter runs an ONNX export (dynamic shapes: each text at its own length) on all three. The app
 * creates the session and passes it with its package's Tensor class:
 *
 *   import * as ort from 'onnxruntime-react-native';   // or onnxruntime-node / onnxruntime-web
 *   const session = await ort.InferenceSession.create(modelPath);
 *   const model = await EdgeModel.load({ manifest, tokenizerJson, tokenizerConfig, runtime: onnxruntime({ session, Tensor: ort.Tensor }) });
 */
import { requireTarget, type ExportInfo } from '../manifest.js';
import type { InputTensor, OutputArray, OutputTensor, Runtime, RuntimeFactory } from '../runtime.js';

/** What the adapter uses of onnxruntime-common's Tensor. */
export interface OrtTensorLike {
  readonly data: unknown;
  readonly dims: readonly number[];
  readonly type: string;
}

export type OrtTensorClass = new (type: 'int32' | 'int64', data: Int32Array | BigInt64Array, dims: readonly number[]) => OrtTensorLike;

/** What the adapter uses of onnxruntime-common's InferenceSession. */
export interface OrtSessionLike {
  readonly inputNames: readonly string[];
  readonly outputNames: readonly string[];
  run(feeds: Record<string, OrtTensorLike>, fetches: readonly string[]): Promise<Record<string, OrtTensorLike>>;
  release?(): Promise<void>;
}

export interface OnnxRuntimeHandles {
  session: OrtSessionLike;
  Tensor: OrtTensorClass;
  /** Shown in errors and by `runtime.name` (default "onnxruntime"). */
  name?: string;
}

function checkSession(session: OrtSessionLike, info: ExportInfo, name: string): void {
  const wanted = info.inputs.map((i) => i.name);
  const missing = wanted.filter((n) => !session.inputNames.includes(n));
  const extra = session.inputNames.filter((n) => !(wanted as string[]).includes(n));
  if (missing.length || extra.length) {
    throw new Error(`${name}: the session takes inputs [${session.inputNames.join(', ')}], ${info.name}'s manifest lists [${wanted.join(', ')}]: is it this export's ${info.modelFile}?`);
  }
  const absent = info.taskOutputs.filter((n) => !session.outputNames.includes(n));
  if (absent.length) throw new Error(`${name}: the session has no output ${absent.join(', ')} (it has ${session.outputNames.join(', ')})`);
}

function outputOf(tensor: OrtTensorLike, name: string, runtime: string): OutputTensor {
  const data = tensor.data;
  if (!(data instanceof Float32Array || data instanceof Int32Array || data instanceof BigInt64Array)) {
    throw new Error(`${runtime}: output '${name}' is ${tensor.type}; float32, int32 or int64 expected`);
  }
  return { data: data as OutputArray, shape: [...tensor.dims] };
}

/** The adapter: `onnxruntime({ session, Tensor })` → a RuntimeFactory for EdgeModel.load. */
export function onnxruntime({ session, Tensor, name = 'onnxruntime' }: OnnxRuntimeHandles): RuntimeFactory {
  return (info: ExportInfo): Runtime => {
    requireTarget(info, 'onnx', `the ${name} adapter`);
    checkSession(session, info, name);
    return {
      name,
      lengths: null,
      async run(inputs: InputTensor[], outputs: readonly string[]) {
        const feeds = Object.fromEntries(inputs.map((i) => [i.name, new Tensor(i.dtype, i.data, i.shape)]));
        const result = await session.run(feeds, outputs);
        return Object.fromEntries(outputs.map((o) => [o, outputOf(result[o], o, name)]));
      },
      dispose() {
        void session.release?.();
      },
    };
  };
}
