/**
 * The JS core under Hermes (test/hermes/build.mjs bundles this file, lowers it with the React Native Babel preset,
 * compiles it with React Native's hermesc and runs it in a Hermes VM): the tokenizer, the manifest reader and each
 * adapter's feeds, driven against stand-in runtime objects that record the tensors they are given (as the Node tests
 * do). Nothing is checked here: the engine's answers are printed as one JSON line (`EDGEBERT_HERMES_RESULT {...}`),
 * and tests/test_hermes.py compares them with Python's.
 *
 * Inputs are globals the build script puts before the bundle: EDGEBERT_HERMES_CASES (tests/test_hermes.py's cases
 * file) and EDGEBERT_HERMES_REGEXPS (see `installRegExpShim`). The engine's own `print` writes the result.
 */
import { EdgeModel, ManifestError, readManifest, type RuntimeFactory } from '../../src/index.js';
import { EdgeTokenizer } from '../../src/tokenizer.js';
import { executorch, type EtDType, type EtModelLike, type EtTensorLike } from '../../src/adapters/executorch.js';
import { fastTflite, type TfliteModelLike, type TfliteTensorLike } from '../../src/adapters/fast-tflite.js';
import { onnxruntime, type OrtSessionLike, type OrtTensorLike } from '../../src/adapters/onnxruntime.js';
import { tfjs, type GraphModelLike, type TfCoreLike, type TfTensorLike } from '../../src/adapters/tfjs.js';

declare const print: (...values: unknown[]) => void;
declare const HermesInternal: { getRuntimeProperties?: () => Record<string, unknown> } | undefined;

type Adapter = 'onnxruntime' | 'fast-tflite' | 'executorch' | 'tfjs';

export interface HermesCases {
  texts: string[];
  tokenizer: { json: object; config: object; seqLen: number; doLowerCase: boolean };
  exports: {
    name: string;
    adapter: Adapter;
    manifest: Record<string, unknown>;
    /** fast-tflite: the .tflite's first-subgraph tensors as LiteRT lists them. */
    native?: { inputs: TfliteTensorLike[]; outputs: TfliteTensorLike[] };
  }[];
  /** The export whose int64 inputs are built again with BigInt64Array removed from the engine. */
  int64Export: string;
}

/** One input tensor as the runtime received it. */
interface Feed {
  /** The runtime's name for it (ONNX feed key, LiteRT tensor name, TF.js feed key); null where it has none (ExecuTorch). */
  name: string | null;
  dtype: string;
  /** The typed array it was given (fast-tflite: an ArrayBuffer). */
  arrayType: string;
  shape: number[];
  byteLength: number;
  values: number[];
}

interface Call {
  text: string;
  /** TF.js: the graph file that ran. */
  graph?: string;
  feeds: Feed[];
}

/** The regular expressions with Unicode property escapes that an engine without them is handed instead (below). */
type RegExpTable = Record<string, { source: string; flags: string }>;

const g = globalThis as unknown as Record<string, unknown>;
const CASES = g.EDGEBERT_HERMES_CASES as HermesCases;
const REGEXPS = (g.EDGEBERT_HERMES_REGEXPS ?? {}) as RegExpTable;

function message(err: unknown): string {
  return err instanceof Error ? `${err.name}: ${err.message}` : String(err);
}

function typeName(value: unknown): string {
  return Object.prototype.toString.call(value).slice(8, -1);
}

function numbersOf(data: ArrayLike<number | bigint>): number[] {
  return Array.from(data, (v) => Number(v));
}

function feedOf(name: string | null, dtype: string, data: Int32Array | BigInt64Array | Float32Array | Uint8Array, shape: readonly number[]): Feed {
  return { name, dtype, arrayType: typeName(data), shape: [...shape], byteLength: data.byteLength, values: numbersOf(data) };
}

function engine(): Record<string, unknown> {
  const hermes = typeof HermesInternal !== 'undefined' && HermesInternal?.getRuntimeProperties ? HermesInternal.getRuntimeProperties() : null;
  let propertyEscapes: boolean;
  try {
    propertyEscapes = new RegExp('\\p{L}', 'u').test('é');
  } catch {
    propertyEscapes = false;
  }
  return {
    hermes: hermes ? hermes['OSS Release Version'] ?? 'unknown' : null,
    bytecodeVersion: hermes ? hermes['Bytecode Version'] ?? null : null,
    BigInt: typeof BigInt !== 'undefined',
    BigInt64Array: typeof BigInt64Array !== 'undefined',
    regexpPropertyEscapes: propertyEscapes,
    console: typeof console !== 'undefined',
    normalizeNFD: 'é'.normalize('NFD').length === 2,
    arrayAt: typeof (Array.prototype as { at?: unknown }).at === 'function',
    TextEncoder: typeof TextEncoder !== 'undefined',
  };
}

/**
 * POLYFILL, for an engine without Unicode property escapes in RegExp (Hermes 0.12: "Invalid RegExp: Invalid escape").
 * React Native's current Hermes has them (its hermesc compiles these very patterns: build.mjs checks it), so this
 * stands in for the engine only. @huggingface/tokenizers builds some of its regular expressions at run time with
 * `new RegExp(source, 'u')` (BERT's pre-tokenizer: `[^\s\p{P}…]+|[\p{P}…]`), which Babel cannot lower. The build
 * script recorded each such pattern when it ran this bundle in Node and rewrote it with regexpu-core (what React
 * Native's Babel preset does to regex literals for the legacy Hermes profile); `RegExp` here hands the engine that
 * rewrite for exactly those patterns and passes anything else through unchanged (a pattern it lacks still throws).
 */
function installRegExpShim(): number {
  const Native = RegExp;
  const shim = function RegExp(this: unknown, pattern: string | RegExp, flags?: string) {
    const source = typeof pattern === 'string' ? pattern : pattern.source;
    const f = flags ?? (typeof pattern === 'string' ? '' : pattern.flags);
    const rewritten = REGEXPS[`${f}/${source}`];
    return rewritten ? new Native(rewritten.source, rewritten.flags) : new Native(pattern, flags);
  };
  shim.prototype = Native.prototype;
  g.RegExp = shim;
  return Object.keys(REGEXPS).length;
}

/**
 * POLYFILL, for an engine without `console` (the Hermes CLI): React Native installs one. Messages are kept in the
 * result instead of printed.
 */
const consoleMessages: string[] = [];
function installConsole(): boolean {
  if (typeof console !== 'undefined') return false;
  const log = (...args: unknown[]) => consoleMessages.push(args.map(String).join(' '));
  g.console = { log, warn: log, error: log, info: log, debug: log };
  return true;
}

// --- the tokenizer ----------------------------------------------------------------------------------------------

function tokenizerIds(): { text: string; ids: number[]; truncated: boolean; length: number }[] {
  const { json, config, seqLen, doLowerCase } = CASES.tokenizer;
  const tok = new EdgeTokenizer(json, config, { seqLen, dynamic: true, doLowerCase });
  return CASES.texts.map((text) => {
    const encoded = tok.encode(text);
    return { text, ids: tok.ids(text), truncated: encoded.truncated, length: encoded.length };
  });
}

// --- the manifest reader ----------------------------------------------------------------------------------------

function manifests(): unknown[] {
  return CASES.exports.map(({ name, manifest }) => {
    try {
      const info = readManifest(manifest);
      return {
        name, target: info.target, task: info.task, seqLen: info.seqLen, labels: info.labels, doLowerCase: info.doLowerCase,
        inputs: info.inputs, buckets: info.buckets?.map((b) => b.seqLen) ?? null, taskOutputs: [...info.taskOutputs],
      };
    } catch (err) {
      return { name, error: message(err) };
    }
  });
}

function refusals(): unknown[] {
  const base = CASES.exports[0].manifest;
  const cases: [string, Record<string, unknown>][] = [
    ['float32 input', { ...base, inputs: [{ name: 'input_ids', dtype: 'float32', shape: [1, 32] }] }],
    ['model directory', { ...base, kind: 'model' }],
  ];
  return cases.map(([what, manifest]) => {
    try {
      readManifest(manifest);
      return { what, error: null };
    } catch (err) {
      return { what, error: message(err), manifestError: err instanceof ManifestError, isError: err instanceof Error };
    }
  });
}

// --- stand-in runtimes that record what they are given ------------------------------------------------------------

/** onnxruntime-common's Tensor and an InferenceSession with the export's input and output names. */
function onnxStandIn(manifest: Record<string, unknown>, calls: Call[]): RuntimeFactory {
  class Tensor implements OrtTensorLike {
    constructor(readonly type: string, readonly data: Int32Array | BigInt64Array | Float32Array, readonly dims: readonly number[]) {}
  }
  const inputs = (manifest.inputs as { name: string }[]).map((i) => i.name);
  const outputs = (manifest.outputs as { name: string; shape: (number | string)[] }[]);
  const session: OrtSessionLike = {
    inputNames: inputs,
    outputNames: outputs.map((o) => o.name),
    async run(feeds, fetches) {
      calls[calls.length - 1].feeds = Object.entries(feeds).map(([name, t]) => feedOf(name, t.type, t.data as Int32Array, t.dims));
      return Object.fromEntries(fetches.map((name) => {
        const shape = outputs.find((o) => o.name === name)!.shape.map((d) => (typeof d === 'number' ? d : 1));
        return [name, new Tensor('float32', new Float32Array(shape.reduce((a, b) => a * b, 1)), shape)];
      }));
    },
  };
  return onnxruntime({ session, Tensor: Tensor as never, name: 'onnxruntime-react-native (stand-in)' });
}

const BUFFER_VIEWS: Record<string, (b: ArrayBuffer) => Int32Array | BigInt64Array | Float32Array> = {
  int32: (b) => new Int32Array(b),
  int64: (b) => new BigInt64Array(b),
  float32: (b) => new Float32Array(b),
};

/** react-native-fast-tflite's TfliteModel with the .tflite's tensors: records the input buffers. */
function tfliteStandIn(native: { inputs: TfliteTensorLike[]; outputs: TfliteTensorLike[] }, calls: Call[]): RuntimeFactory {
  const model: TfliteModelLike = {
    inputs: native.inputs,
    outputs: native.outputs,
    async run(buffers) {
      calls[calls.length - 1].feeds = buffers.map((buffer, i) => {
        const t = native.inputs[i];
        const view = BUFFER_VIEWS[t.dataType](buffer);
        return { ...feedOf(t.name, t.dataType, view, t.shape), arrayType: typeName(buffer) };
      });
      return native.outputs.map((o) => new Float32Array(o.shape.reduce((a, b) => a * b, 1)).buffer);
    },
  };
  return fastTflite(model);
}

/** react-native-executorch's `tensor` factory and a Model whose `forward` schema has the manifest's dtypes. */
function executorchStandIn(manifest: Record<string, unknown>, calls: Call[]): RuntimeFactory {
  type Data = Float32Array | Uint8Array | Int32Array | BigInt64Array;
  class Tensor implements EtTensorLike {
    constructor(readonly dtype: EtDType, readonly shape: number[], readonly src?: Data) {}
    getData<T extends Data>(dst: T): T {
      return dst;
    }
    dispose(): void {}
  }
  const spec = (o: { dtype: string }) => ({ kind: 'Tensor', dtype: o.dtype as EtDType });
  const model: EtModelLike<Tensor> = {
    schema: { forward: { inputs: (manifest.inputs as { dtype: string }[]).map(spec), outputs: (manifest.outputs as { dtype: string }[]).map(spec) } },
    execute(_method, inputs, outputs) {
      calls[calls.length - 1].feeds = inputs.map((t) => ({
        ...feedOf(null, t.dtype, t.src ?? new Uint8Array(0), t.shape), arrayType: t.src ? typeName(t.src) : 'none',
      }));
      return outputs;
    },
    dispose() {},
  };
  return executorch({ model, tensor: (dtype, shape, src) => new Tensor(dtype, shape, src) });
}

/** @tensorflow/tfjs-core (tensor, zeros) and the converter's GraphModel, one per bucket graph file. */
function tfjsStandIn(calls: Call[], warmUps: string[]): RuntimeFactory {
  class Tensor implements TfTensorLike {
    constructor(readonly values: Int32Array | Float32Array, readonly shape: number[], readonly dtype: string) {}
    async data(): Promise<unknown> {
      return this.values;
    }
    dispose(): void {}
  }
  type Source = { load: () => Promise<object>; file: string };
  class GraphModel implements GraphModelLike<Tensor> {
    readonly file: string;
    constructor(handler: Source) {
      this.file = handler.file;
    }
    load(): boolean {
      return true;
    }
    execute(feeds: Record<string, Tensor>, outputs: string | string[]): Tensor | Tensor[] {
      const recorded = Object.entries(feeds).map(([name, t]) => feedOf(name, t.dtype, t.values, t.shape));
      if (!calls.length) warmUps.push(this.file); // at load, before any text
      else Object.assign(calls[calls.length - 1], { graph: this.file, feeds: recorded });
      const out = (Array.isArray(outputs) ? outputs : [outputs]).map(() => new Tensor(new Float32Array(3), [1, 3], 'float32'));
      return Array.isArray(outputs) ? out : out[0];
    }
    dispose(): void {}
  }
  const tf = {
    tensor: (values: Int32Array, shape: number[], dtype: 'int32') => new Tensor(values, shape, dtype),
    zeros: (shape: number[], dtype: 'int32') => new Tensor(new Int32Array(shape.reduce((a, b) => a * b, 1)), shape, dtype),
    getBackend: () => 'rn-webgl (stand-in)',
    io: { http: () => { throw new Error('unused'); }, decodeWeights: () => ({}) },
  } as unknown as TfCoreLike<Tensor>;
  const source = (file: string): Source => ({ load: async () => ({}), file });
  return tfjs({ tf, GraphModel: GraphModel as never }, { source: source('model.json'), bucketSource: source });
}

async function runAdapter(exp: HermesCases['exports'][number]): Promise<Record<string, unknown>> {
  const calls: Call[] = [];
  const warmUps: string[] = [];
  const runtime =
    exp.adapter === 'onnxruntime' ? onnxStandIn(exp.manifest, calls)
      : exp.adapter === 'fast-tflite' ? tfliteStandIn(exp.native!, calls)
        : exp.adapter === 'executorch' ? executorchStandIn(exp.manifest, calls)
          : tfjsStandIn(calls, warmUps);
  try {
    const { json, config } = CASES.tokenizer;
    const model = await EdgeModel.load({ manifest: exp.manifest, tokenizerJson: json, tokenizerConfig: config, runtime });
    for (const text of CASES.texts) {
      calls.push({ text, feeds: [] });
      const ranked = await model.classify(text);
      if (ranked.length !== model.info.labels.length) throw new Error(`classify returned ${ranked.length} labels`);
    }
    model.dispose();
    return { name: exp.name, adapter: exp.adapter, runtime: model.runtime.name, lengths: model.lengths, calls, warmUps };
  } catch (err) {
    return { name: exp.name, adapter: exp.adapter, error: message(err), calls };
  }
}

/** The int64 export's feeds on an engine without BigInt64Array (removed here, then put back). */
async function withoutBigInt64Array(): Promise<Record<string, unknown>> {
  const exp = CASES.exports.find((e) => e.name === CASES.int64Export);
  if (!exp) return { error: `no export named ${CASES.int64Export}` };
  const saved = g.BigInt64Array;
  delete g.BigInt64Array;
  try {
    const removed = typeof BigInt64Array === 'undefined';
    return { removed, ...(await runAdapter(exp)) };
  } finally {
    g.BigInt64Array = saved;
  }
}

async function main(): Promise<Record<string, unknown>> {
  const result: Record<string, unknown> = { engine: engine() };
  const polyfills: string[] = [];
  if (installConsole()) polyfills.push('console');
  try {
    result.tokenizer = { ids: tokenizerIds() };
  } catch (err) {
    // The engine cannot build the tokenizer as it is: say why, then (if the build script gave rewrites) retry with the
    // RegExp polyfill above.
    const native = message(err);
    if (!Object.keys(REGEXPS).length) {
      result.tokenizer = { error: native };
    } else {
      polyfills.push(`RegExp (${installRegExpShim()} patterns with Unicode property escapes, rewritten by regexpu-core)`);
      try {
        result.tokenizer = { withoutPolyfill: native, ids: tokenizerIds() };
      } catch (err2) {
        result.tokenizer = { withoutPolyfill: native, error: message(err2) };
      }
    }
  }
  result.manifests = manifests();
  result.refusals = refusals();
  const adapters: unknown[] = [];
  for (const exp of CASES.exports) adapters.push(await runAdapter(exp));
  result.adapters = adapters;
  result.withoutBigInt64Array = await withoutBigInt64Array();
  result.polyfills = polyfills;
  result.console = consoleMessages;
  return result;
}

main().then(
  (result) => print(`EDGEBERT_HERMES_RESULT ${JSON.stringify(result)}`),
  (err) => print(`EDGEBERT_HERMES_RESULT ${JSON.stringify({ fatal: message(err), stack: err instanceof Error ? String(err.stack) : null })}`),
);
