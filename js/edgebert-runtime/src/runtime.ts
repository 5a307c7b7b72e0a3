/**
 * The one interface every runtime adapter implements: run one text's input tensors, return the named outputs.
 * Adapters take the runtime's own objects (an InferenceSession, a GraphModel, a TfliteModel, an ExecuTorch Model)
 * from the app, so this package never imports a runtime itself.
 */
import type { EncodedText } from './tokenizer.js';
import type { ExportInfo, InputDtype, InputName } from './manifest.js';

export type IdArray = Int32Array | BigInt64Array;
export type OutputArray = Float32Array | Int32Array | BigInt64Array;

/** One input of one text: [1, length], in the export's dtype. */
export interface InputTensor {
  name: InputName;
  dtype: InputDtype;
  shape: [1, number];
  data: IdArray;
}

export interface OutputTensor {
  data: OutputArray;
  shape: number[];
}

export interface Runtime {
  /** e.g. "onnxruntime", "tfjs (wasm)", "react-native-fast-tflite". */
  readonly name: string;
  /** The sequence lengths it runs, ascending; null: any length up to the export's seq_len (dynamic shapes). */
  readonly lengths: readonly number[] | null;
  /** Run one text (inputs in the export's order) and return at least the `outputs` asked for. */
  run(inputs: InputTensor[], outputs: readonly string[]): Promise<Record<string, OutputTensor>>;
  dispose(): void;
}

/** What an adapter module exports: given the checked manifest, the runtime (loaded if needed). */
export type RuntimeFactory = (info: ExportInfo) => Runtime | Promise<Runtime>;

const ENCODED: Record<InputName, keyof Pick<EncodedText, 'inputIds' | 'attentionMask' | 'tokenTypeIds'>> = {
  input_ids: 'inputIds',
  attention_mask: 'attentionMask',
  token_type_ids: 'tokenTypeIds',
};

/** The export's inputs of one encoded text, in its order and dtypes (int64 as BigInt64Array). */
export function inputTensors(encoded: EncodedText, info: ExportInfo): InputTensor[] {
  return info.inputs.map(({ name, dtype }) => {
    const values = encoded[ENCODED[name]];
    if (dtype === 'int64' && typeof BigInt64Array === 'undefined') throw new Error(`input '${name}' is int64 but this JavaScript engine has no BigInt64Array; export with --input-dtype int32 (ONNX)`);
    const data = dtype === 'int64' ? BigInt64Array.from(values, (v) => BigInt(v)) : values;
    return { name, dtype, shape: [1, values.length], data };
  });
}

/** An output the runtime did not return, named. */
export function requireOutput(outputs: Record<string, OutputTensor>, name: string, runtime: string): OutputTensor {
  const output = outputs[name];
  if (!output) throw new Error(`${runtime} returned no '${name}' output (got ${Object.keys(outputs).join(', ') || 'none'})`);
  return output;
}
