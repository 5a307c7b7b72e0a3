/**
 * TF.js adapter: an edgebert TF.js export (static int32 [1, bucket] graph models) on whatever backend the app set up
 * (wasm and WebGL in browsers, wasm in Node, rn-webgl / cpu with tfjs-react-native). The app passes its own
 * `@tensorflow/tfjs-core` and the converter's `GraphModel`, and the graph sources:
 *
 *   import * as tf from '@tensorflow/tfjs-core';
 *   import { GraphModel } from '@tensorflow/tfjs-converter';
 *   const runtime = tfjs({ tf, GraphModel }, { source: bundleResourceIO(modelJson, weights) });
 *
 * With `bucketSource` (model file → its source), every bucket graph of the export is loaded (one weight copy) and a
 * text runs on the smallest bucket that holds it; without it, model.json only (the longest length).
 */
import { requireTarget, type ExportInfo } from '../manifest.js';
import type { InputTensor, OutputArray, Runtime, RuntimeFactory } from '../runtime.js';
import { ownWeights, type GraphArtifacts, type GraphIOHandler, type GraphSource } from './tfjs-graphs.js';

export { graphArtifacts, graphOnly, ownWeights, type GraphArtifacts, type GraphIOHandler, type GraphModelJson, type GraphSource } from './tfjs-graphs.js';

/** What the adapter uses of a tf.Tensor. */
export interface TfTensorLike {
  readonly shape: number[];
  data(): Promise<unknown>;
  dispose(): void;
}

/** What the adapter uses of @tensorflow/tfjs-core (T: its Tensor). */
export interface TfCoreLike<T extends TfTensorLike> {
  tensor(values: Int32Array, shape: number[], dtype: 'int32'): T;
  zeros(shape: number[], dtype: 'int32'): T;
  getBackend(): string;
  io: {
    http(path: string): GraphIOHandler;
    decodeWeights(data: never, specs: never): Record<string, unknown>;
  };
}

/** What the adapter uses of @tensorflow/tfjs-converter's GraphModel. */
export interface GraphModelLike<T extends TfTensorLike> {
  load(): boolean | Promise<boolean>;
  execute(inputs: Record<string, T>, outputs: string | string[]): T | T[];
  dispose(): void;
}

export type GraphModelClass<T extends TfTensorLike> = new (handler: never) => GraphModelLike<T>;

/** The app's tfjs: `{ tf, GraphModel }` from @tensorflow/tfjs-core and @tensorflow/tfjs-converter. */
export interface TfjsModules<T extends TfTensorLike> {
  tf: TfCoreLike<T>;
  GraphModel: GraphModelClass<T>;
}

export interface TfjsSources {
  /** model.json (the longest bucket) with the weight shard. */
  source: GraphSource;
  /** The source of another graph file of the export (`model-16.json`), the weights from the first that has them. */
  bucketSource?: (modelFile: string) => GraphSource;
  /** One untimed call per graph at load, so the first query costs what the next ones do (default true). */
  warmUp?: boolean;
}

/** GraphModel's weight-sharing entry point (tfjs-converter 4.x; not in its public typings). */
type SharedLoad = { loadWithWeightMap?: (artifacts: GraphArtifacts, weights: Record<string, unknown>) => void };

/** {bucket length: graph}, the weights of the export decoded once and shared by its graphs. */
async function loadGraphs<T extends TfTensorLike>({ tf, GraphModel }: TfjsModules<T>, sources: [number, GraphSource][]): Promise<Map<number, GraphModelLike<T>>> {
  const graphs = new Map<number, GraphModelLike<T>>();
  const handlers = sources.map(([, source]) => (typeof source === 'string' ? tf.io.http(source) : source));
  const shared = new GraphModel(handlers[0] as never) as unknown as SharedLoad;
  if (sources.length === 1 || typeof shared.loadWithWeightMap !== 'function' || handlers.some((h) => !h.load)) {
    for (const [i, [length]] of sources.entries()) {
      const model = new GraphModel(handlers[i] as never);
      await model.load(); // each graph with its own weights (a tfjs without loadWithWeightMap)
      graphs.set(length, model);
    }
    return graphs;
  }
  const artifacts = await Promise.all(handlers.map((h) => h.load!()));
  const withWeights = artifacts.find((a) => a.weightData && a.weightSpecs);
  if (!withWeights) throw new Error('tfjs: none of the bucket graphs came with the weight shard');
  const weights = tf.io.decodeWeights(withWeights.weightData as never, withWeights.weightSpecs as never);
  for (const [i, [length]] of sources.entries()) {
    const model = new GraphModel(handlers[i] as never);
    (model as unknown as SharedLoad).loadWithWeightMap!(artifacts[i], ownWeights(artifacts[i].modelTopology, weights));
    graphs.set(length, model);
  }
  return graphs;
}

/** The graph sources of the buckets to load: every bucket with `bucketSource`, else model.json alone. */
function bucketSources(info: ExportInfo, sources: TfjsSources): [number, GraphSource][] {
  const buckets = info.buckets ?? [{ seqLen: info.seqLen, modelFile: 'model.json' }];
  if (!sources.bucketSource) return [[info.seqLen, sources.source]];
  return buckets.map((b) => [b.seqLen, sources.bucketSource!(b.modelFile ?? 'model.json')]);
}

/** Signature keys → graph node names, from the manifest (target_details.output_nodes). */
function outputNodes(info: ExportInfo): Record<string, string> {
  const nodes = info.manifest.target_details?.output_nodes;
  const missing = info.taskOutputs.filter((o) => !nodes?.[o]);
  if (missing.length) throw new Error(`tfjs: the export's edgebert.json has no output node for ${missing.join(', ')}; re-export it`);
  return nodes!;
}

function warmUp<T extends TfTensorLike>(tf: TfCoreLike<T>, graphs: Map<number, GraphModelLike<T>>, info: ExportInfo, nodes: string[]): void {
  for (const [length, graph] of graphs) {
    const feeds = Object.fromEntries(info.inputs.map((i) => [i.name, tf.zeros([1, length], 'int32')]));
    const out = graph.execute(feeds, nodes);
    (Array.isArray(out) ? out : [out]).forEach((t) => t.dispose());
    Object.values(feeds).forEach((t) => t.dispose());
  }
}

/** TF.js graphs take int32 ids (every TF.js export's manifest says so). */
function int32(input: InputTensor): Int32Array {
  if (!(input.data instanceof Int32Array)) throw new Error(`tfjs: input '${input.name}' is ${input.dtype}; TF.js exports take int32`);
  return input.data;
}

/** The adapter: `tfjs({ tf, GraphModel }, sources)` → a RuntimeFactory for EdgeModel.load. */
export function tfjs<T extends TfTensorLike>(modules: TfjsModules<T>, sources: TfjsSources): RuntimeFactory {
  return async (info: ExportInfo): Promise<Runtime> => {
    requireTarget(info, 'tfjs', 'the tfjs adapter');
    const nodes = outputNodes(info);
    const graphs = await loadGraphs(modules, bucketSources(info, sources));
    if (sources.warmUp !== false) warmUp(modules.tf, graphs, info, info.taskOutputs.map((o) => nodes[o]));
    return {
      name: `tfjs (${modules.tf.getBackend()})`,
      lengths: [...graphs.keys()].sort((a, b) => a - b),
      async run(inputs: InputTensor[], outputs: readonly string[]) {
        const length = inputs[0].shape[1];
        const graph = graphs.get(length);
        if (!graph) throw new Error(`tfjs: no graph for length ${length} (loaded: ${[...graphs.keys()].join(', ')})`);
        const feeds = Object.fromEntries(inputs.map((i) => [i.name, modules.tf.tensor(int32(i), i.shape, 'int32')]));
        const result = graph.execute(feeds, outputs.map((o) => nodes[o]));
        const tensors = Array.isArray(result) ? result : [result];
        try {
          const values = await Promise.all(tensors.map((t) => t.data()));
          return Object.fromEntries(outputs.map((o, k) => [o, { data: values[k] as OutputArray, shape: [...tensors[k].shape] }]));
        } finally {
          tensors.forEach((t) => t.dispose());
          Object.values(feeds).forEach((t) => t.dispose());
        }
      },
      dispose() {
        graphs.forEach((g) => g.dispose()); // shared weights: the first dispose frees them, the rest are no-ops
      },
    };
  };
}
