/**
 * ExecuTorch adapter for react-native-executorch (its low-level `loadModel` / `tensor` API): a `model.pte` written
 * by `edgebert export --target executorch` (dynamic shapes: each text at its own length, int64 inputs in the
 * manifest's order, outputs in the manifest's order). The app loads the program and passes it with the `tensor`
 * factory:
 *
 *   import { loadModel, tensor } from 'react-native-executorch';
 *   const pte = loadModel(localPathOfModelPte);
 *   const model = await EdgeModel.load({ manifest, tokenizerJson, tokenizerConfig, runtime: executorch({ model: pte, tensor }) });
 *
 * `execute` is synchronous in react-native-executorch: a call blocks the JS thread for the model's run.
 */
import { requireTarget, type ExportInfo, type OutputSpec } from '../manifest.js';
import type { InputTensor, OutputArray, Runtime, RuntimeFactory } from '../runtime.js';

export type EtDType = 'float32' | 'uint8' | 'int32' | 'int64' | 'bool';
type EtArray = Float32Array | Uint8Array | Int32Array | BigInt64Array;

/** What the adapter uses of react-native-executorch's Tensor. */
export interface EtTensorLike {
  readonly dtype: EtDType;
  readonly shape: readonly number[];
  getData<T extends EtArray>(dst: T): T;
  dispose(): void;
}

export type EtTensorFactory<T extends EtTensorLike> = (dtype: EtDType, shape: number[], src?: EtArray) => T;

/** A method's parameter as the program's schema describes it. */
export interface EtParamLike {
  readonly kind: string;
  readonly dtype?: EtDType;
}

/** What the adapter uses of react-native-executorch's Model (T: its Tensor). */
export interface EtModelLike<T extends EtTensorLike> {
  readonly schema?: Readonly<Record<string, { readonly inputs: readonly EtParamLike[]; readonly outputs: readonly EtParamLike[] }>>;
  execute(methodName: string, inputs: T[], outputTensors: T[]): unknown[];
  dispose(): void;
}

export interface ExecuTorchHandles<T extends EtTensorLike> {
  model: EtModelLike<NoInfer<T>>;
  tensor: EtTensorFactory<T>;
  /** The program's method (edgebert writes `forward`). */
  method?: string;
  /**
   * The kernel libraries the app's ExecuTorch build registers beyond its portable kernels and delegates (e.g.
   * `['quantized']`: ExecuTorch's quantized kernels, which 4-bit tables are looked up by). A program whose manifest
   * needs another (`target_details.kernel_libraries`) is refused: its method would fail to load (error 0x14).
   * Default none: edgebert's int8 and fp32 programs need none (docs/export.md says what react-native-executorch registers).
   */
  kernelLibraries?: readonly string[];
}

const NAME = 'react-native-executorch';
const ARRAYS: Partial<Record<EtDType, (n: number) => OutputArray>> = {
  float32: (n) => new Float32Array(n),
  int32: (n) => new Int32Array(n),
  int64: (n) => new BigInt64Array(n),
};

/** An output's shape for one text of `length` tokens: the batch axis 1, any other named axis the length. */
export function outputShape(spec: OutputSpec, length: number): number[] {
  return spec.shape.map((d, i) => (typeof d === 'number' ? d : i === 0 ? 1 : length));
}

/** The output dtypes, from the program's schema when it has one (checked against the manifest's count). */
function outputDtypes(model: EtModelLike<EtTensorLike>, method: string, info: ExportInfo): EtDType[] {
  const spec = model.schema?.[method];
  if (model.schema && !spec) throw new Error(`${NAME}: the program has no method '${method}' (it has ${Object.keys(model.schema).join(', ')})`);
  if (!spec) return info.outputs.map((o) => o.dtype as EtDType);
  if (spec.outputs.length !== info.outputs.length) {
    throw new Error(`${NAME}: '${method}' returns ${spec.outputs.length} outputs, ${info.name}'s manifest lists ${info.outputs.length}: is it this export's model.pte?`);
  }
  spec.inputs.forEach((p, i) => {
    if (p.dtype && p.dtype !== info.inputs[i]?.dtype) throw new Error(`${NAME}: input ${i} is ${p.dtype}, the manifest says ${info.inputs[i]?.dtype}`);
  });
  return spec.outputs.map((p, i) => p.dtype ?? (info.outputs[i].dtype as EtDType));
}

/** Refuses a program that calls kernels of a library the app's runtime does not declare (`kernelLibraries`). */
export function requireKernelLibraries(info: ExportInfo, declared: readonly string[]): void {
  const needed = info.manifest.target_details?.kernel_libraries;
  const missing = Array.isArray(needed) ? needed.filter((lib) => typeof lib === 'string' && !declared.includes(lib)) : [];
  if (missing.length) {
    throw new Error(
      `${NAME}: ${info.name}'s model.pte calls kernels of ${missing.join(', ')}, which this runtime does not declare ` +
        `(kernelLibraries: [${declared.join(', ')}]) and would fail to load (error 0x14); export with --quantize int8 ` +
        `(its tables need none), or pass kernelLibraries: ['${missing.join("', '")}'] if your ExecuTorch build registers them`,
    );
  }
}

/** The adapter: `executorch({ model, tensor })` → a RuntimeFactory for EdgeModel.load. */
export function executorch<T extends EtTensorLike>({ model, tensor, method = 'forward', kernelLibraries = [] }: ExecuTorchHandles<T>): RuntimeFactory {
  return (info: ExportInfo): Runtime => {
    requireTarget(info, 'executorch', `the ${NAME} adapter`);
    requireKernelLibraries(info, kernelLibraries);
    const dtypes = outputDtypes(model, method, info);
    dtypes.forEach((d, i) => {
      if (!ARRAYS[d]) throw new Error(`${NAME}: output '${info.outputs[i].name}' is ${d}; float32, int32 or int64 expected`);
    });
    return {
      name: NAME,
      lengths: null,
      async run(inputs: InputTensor[], wanted: readonly string[]) {
        const length = inputs[0].shape[1];
        const feeds = inputs.map((i) => tensor(i.dtype, [...i.shape], i.data));
        const shapes = info.outputs.map((o) => outputShape(o, length));
        const outs = shapes.map((shape, k) => tensor(dtypes[k], shape));
        try {
          model.execute(method, feeds, outs);
          return Object.fromEntries(
            wanted.map((name) => {
              const k = info.outputs.findIndex((o) => o.name === name);
              if (k < 0) throw new Error(`${NAME}: ${info.name} has no output '${name}'`);
              const size = shapes[k].reduce((a, b) => a * b, 1);
              return [name, { data: outs[k].getData(ARRAYS[dtypes[k]]!(size)), shape: shapes[k] }];
            }),
          );
        } finally {
          [...feeds, ...outs].forEach((t) => t.dispose());
        }
      },
      dispose() {
        model.dispose();
      },
    };
  };
}
