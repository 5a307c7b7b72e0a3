/**
 * LiteRT adapter for react-native-fast-tflite (Core ML / Metal / NNAPI / GPU delegates). The app loads the model and
 * passes it:
 *
 *   import { loadTensorflowModel } from 'react-native-fast-tflite';
 *   const tflite = await loadTensorflowModel(require('./model.tflite'), []);
 *   const model = await EdgeModel.load({ manifest, tokenizerJson, tokenizerConfig, runtime: fastTflite(tflite) });
 *
 * fast-tflite runs a .tflite's first subgraph only, with no signature choice: inputs and outputs are matched to the
 * manifest by tensor name (LiteRT names them `<signature>_input_ids`, `<signature>_logits_output`), and an export with
 * buckets is refused when that subgraph is not its longest length (texts would be cut to the shorter one).
 */
import { requireTarget, type ExportInfo } from '../manifest.js';
import type { InputTensor, OutputArray, Runtime, RuntimeFactory } from '../runtime.js';
import { namesTensor, tensorIndex } from './tensor-names.js';

/** react-native-fast-tflite's Tensor (the model's input and output descriptions). */
export interface TfliteTensorLike {
  name: string;
  dataType: string;
  shape: number[];
}

/** What the adapter uses of react-native-fast-tflite's TfliteModel (v3: ArrayBuffers in, ArrayBuffers out). */
export interface TfliteModelLike {
  readonly inputs: TfliteTensorLike[];
  readonly outputs: TfliteTensorLike[];
  run(input: ArrayBuffer[]): Promise<ArrayBuffer[]>;
}

const NAME = 'react-native-fast-tflite';

const OUTPUT_ARRAYS: Record<string, (buffer: ArrayBuffer) => OutputArray> = {
  float32: (b) => new Float32Array(b),
  int32: (b) => new Int32Array(b),
  int64: (b) => new BigInt64Array(b),
};

/** The model input tensor of each manifest input (their order in the model), checked for dtype and shape. */
function inputOrder(model: TfliteModelLike, info: ExportInfo): { order: number[]; length: number } {
  const names = model.inputs.map((t) => t.name);
  const order = model.inputs.map((tensor) => {
    const k = info.inputs.findIndex((i) => namesTensor(tensor.name, i.name));
    if (k < 0) throw new Error(`${NAME}: the model's input '${tensor.name}' is none of ${info.inputs.map((i) => i.name).join(', ')}`);
    if (tensor.dataType !== info.inputs[k].dtype) throw new Error(`${NAME}: input '${tensor.name}' is ${tensor.dataType}, the manifest says ${info.inputs[k].dtype}`);
    return k;
  });
  if (new Set(order).size !== info.inputs.length) throw new Error(`${NAME}: the model's inputs [${names.join(', ')}] do not match the manifest's`);
  const lengths = new Set(model.inputs.map((t) => (t.shape.length === 2 && t.shape[0] === 1 ? t.shape[1] : -1)));
  const [length] = lengths;
  if (lengths.size !== 1 || length < 2) throw new Error(`${NAME}: inputs of shapes ${model.inputs.map((t) => `[${t.shape}]`).join(', ')}; [1, length] expected`);
  return { order, length };
}

function checkLength(info: ExportInfo, length: number): void {
  if (length === info.seqLen) return;
  const bucket = info.buckets?.find((b) => b.seqLen === length);
  throw new Error(
    `${NAME} runs a .tflite's first subgraph only; in ${info.name} that takes ${length} tokens` +
      `${bucket?.signature ? ` (signature ${bucket.signature})` : ''}, not the export's ${info.seqLen}: export for this runtime ` +
      `with one length (edgebert export --target tflite --seq-len ${info.seqLen})`,
  );
}

function inputBuffer(input: InputTensor): ArrayBuffer {
  const { buffer, byteOffset, byteLength } = input.data;
  return buffer.slice(byteOffset, byteOffset + byteLength) as ArrayBuffer;
}

/** The adapter: `fastTflite(model)` → a RuntimeFactory for EdgeModel.load. */
export function fastTflite(model: TfliteModelLike): RuntimeFactory {
  return (info: ExportInfo): Runtime => {
    requireTarget(info, 'tflite', `the ${NAME} adapter`);
    const { order, length } = inputOrder(model, info);
    checkLength(info, length);
    const outputNames = model.outputs.map((t) => t.name);
    const outputIndex = Object.fromEntries(info.taskOutputs.map((o) => [o, tensorIndex(outputNames, o, NAME)]));
    return {
      name: NAME,
      lengths: [length],
      async run(inputs: InputTensor[], outputs: readonly string[]) {
        const buffers = await model.run(order.map((k) => inputBuffer(inputs[k])));
        return Object.fromEntries(
          outputs.map((o) => {
            const index = outputIndex[o] ?? tensorIndex(outputNames, o, NAME);
            const tensor = model.outputs[index];
            const toArray = OUTPUT_ARRAYS[tensor.dataType];
            if (!toArray) throw new Error(`${NAME}: output '${tensor.name}' is ${tensor.dataType}; float32, int32 or int64 expected`);
            return [o, { data: toArray(buffers[index]), shape: [...tensor.shape] }];
          }),
        );
      },
      dispose() {},
    };
  };
}
