/**
 * The embedding model: an edgebert TF.js graph model (static int32 [1, seq_len] inputs) plus its tokenizer.
 * An export with sequence-length buckets (`edgebert export --buckets`, or `--seq-len 16,32,64,128`) has one graph per bucket over
 * one weight shard: each text is padded to the smallest bucket that holds it and runs on that bucket's graph, the
 * weights decoded once and shared by the graphs.
 *
 * Platform-neutral: it imports only @tensorflow/tfjs-core and -converter (and edgebert's shared JS, which imports
 * nothing), and takes the model source as an injected tf.io.IOHandler (bundleResourceIO in the React Native app, a
 * file handler in Node, tf.io.http or a URL in the browser). The caller picks and initialises the backend (rn-webgl /
 * cpu / wasm) before loading.
 */
import * as tf from '@tensorflow/tfjs-core';
import { GraphModel } from '@tensorflow/tfjs-converter';

import { ownWeights } from '../../../edgebert/targets/tfjs/js/shared/graph_weights.mjs';
import { EdgeTokenizer, type EncodedText } from './tokenizer';
import type { ExportManifest } from './types';

export const EMBEDDING_OUTPUT = 'sentence_embedding';

/** Where the model comes from: an IOHandler (bundleResourceIO, file, …) or a URL of model.json. */
export type ModelSource = tf.io.IOHandler | string;

export interface ModelFiles {
  /** The export's edgebert.json. */
  manifest: ExportManifest;
  /** The export's tokenizer.json and tokenizer_config.json, parsed. */
  tokenizerJson: object;
  tokenizerConfig: object;
  /** model.json + the weights shard. */
  source: ModelSource;
  /**
   * The source of another graph file of the export (a bucket's `model-16.json`, same shard). Without it only
   * model.json (the longest bucket) is used: every text is padded to the export's longest length.
   */
  bucketSource?: (modelFile: string) => ModelSource;
}

/** GraphModel's weight-sharing entry point (tfjs-converter 4.x; not in its public typings). */
type SharedLoad = { loadWithWeightMap?: (artifacts: tf.io.ModelArtifacts, weights: tf.NamedTensorMap) => void };

/**
 * {bucket length: graph}: the graphs of one export share one decoded copy of its weight shard, decoded from the
 * first source that carries the weights (the others may be topology-only: `graphOnly`).
 */
async function loadGraphs(sources: [number, ModelSource][]): Promise<Map<number, GraphModel>> {
  const graphs = new Map<number, GraphModel>();
  const handlers = sources.map(([, source]) => (typeof source === 'string' ? tf.io.http(source) : source));
  const shared = new GraphModel(handlers[0]) as unknown as SharedLoad;
  if (sources.length === 1 || typeof shared.loadWithWeightMap !== 'function' || handlers.some((h) => !h.load)) {
    for (const [i, [length]] of sources.entries()) {
      const model = new GraphModel(handlers[i]);
      await model.load(); // each graph with its own weights (a tfjs without loadWithWeightMap)
      graphs.set(length, model);
    }
    return graphs;
  }
  const artifacts = await Promise.all(handlers.map((h) => h.load!()));
  const withWeights = artifacts.find((a) => a.weightData && a.weightSpecs);
  if (!withWeights) throw new Error('none of the bucket graphs came with the weight shard');
  const weights = tf.io.decodeWeights(withWeights.weightData!, withWeights.weightSpecs!);
  for (const [i, [length]] of sources.entries()) {
    const model = new GraphModel(handlers[i]);
    (model as unknown as SharedLoad).loadWithWeightMap!(artifacts[i], ownWeights(artifacts[i].modelTopology, weights));
    graphs.set(length, model);
  }
  return graphs;
}

/** What a graph's model.json says, as model artifacts (without the weight bytes, which live in the shard). */
export function graphArtifacts(modelJson: tf.io.ModelJSON): tf.io.ModelArtifacts {
  return {
    modelTopology: modelJson.modelTopology,
    format: modelJson.format,
    generatedBy: modelJson.generatedBy,
    convertedBy: modelJson.convertedBy,
    signature: modelJson.signature,
    userDefinedMetadata: modelJson.userDefinedMetadata,
    modelInitializer: modelJson.modelInitializer,
    weightSpecs: modelJson.weightsManifest.flatMap((group) => group.weights),
  };
}

/**
 * An IOHandler of one bucket's graph without its weights (they come from another graph of the export: see
 * `loadGraphs`): what an app whose bundle holds the shard once gives for the buckets after the first.
 */
export function graphOnly(modelJson: tf.io.ModelJSON): tf.io.IOHandler {
  return { load: async () => graphArtifacts(modelJson) };
}

/**
 * One untimed call per graph at load: the first execute of a graph orders its nodes, and the first of an export
 * prepares every weight for the backend's kernels (XNNPACK packing on wasm, shader compiles on WebGL), so the
 * user's first query costs what the next ones do.
 */
function warmUp(graphs: Map<number, GraphModel>, inputNames: string[], outputNode: string): void {
  for (const [length, graph] of graphs) {
    const feeds: Record<string, tf.Tensor> = {};
    for (const name of inputNames) feeds[name] = tf.zeros([1, length], 'int32');
    tf.dispose(graph.execute(feeds, outputNode)); // the output the app asks for: its execution plan is cached too
    tf.dispose(Object.values(feeds));
  }
}

const now = (): number => (typeof performance !== 'undefined' ? performance.now() : Date.now());

function checkManifest(manifest: ExportManifest): void {
  if (manifest.target !== 'tfjs') {
    throw new Error(`this app needs a TF.js export (edgebert export --target tfjs), got target '${manifest.target}'`);
  }
  if (!manifest.target_details?.output_nodes?.[EMBEDDING_OUTPUT]) {
    throw new Error(`the export's edgebert.json has no output node for '${EMBEDDING_OUTPUT}'; re-export it`);
  }
}

export class Embedder {
  /** Wall time of the last embed() call, tokenisation included, in milliseconds. */
  lastEmbedMs = 0;
  /** The bucket (padded length) of the last text embedded. */
  lastSeqLen = 0;

  private constructor(
    readonly manifest: ExportManifest,
    readonly tokenizer: EdgeTokenizer,
    private readonly graphs: Map<number, GraphModel>,
    private readonly outputNode: string,
    private readonly inputNames: string[],
  ) {}

  static async load(files: ModelFiles): Promise<Embedder> {
    checkManifest(files.manifest);
    const { manifest } = files;
    const listed = manifest.buckets?.length ? manifest.buckets : [{ seq_len: manifest.seq_len, model_file: 'model.json' }];
    const usable = files.bucketSource ? listed : listed.filter((b) => b.seq_len === manifest.seq_len);
    const sources: [number, ModelSource][] = usable.map((b) => [
      b.seq_len,
      files.bucketSource ? files.bucketSource(b.model_file ?? 'model.json') : files.source,
    ]);
    const tokenizer = new EdgeTokenizer(files.tokenizerJson, files.tokenizerConfig, {
      seqLen: manifest.seq_len,
      buckets: sources.map(([length]) => length),
      doLowerCase: manifest.model?.do_lower_case,
    });
    const graphs = await loadGraphs(sources);
    const inputNames = manifest.inputs.map((i) => i.name);
    const outputNode = manifest.target_details.output_nodes[EMBEDDING_OUTPUT];
    warmUp(graphs, inputNames, outputNode);
    return new Embedder(manifest, tokenizer, graphs, outputNode, inputNames);
  }

  /** The padded lengths this embedder runs (one graph each). */
  get buckets(): number[] {
    return this.tokenizer.buckets;
  }

  get dim(): number {
    return this.manifest.model.hidden_size;
  }

  private feeds(enc: EncodedText): Record<string, tf.Tensor> {
    const byName: Record<string, Int32Array> = {
      input_ids: enc.inputIds,
      attention_mask: enc.attentionMask,
      token_type_ids: enc.tokenTypeIds,
    };
    const feeds: Record<string, tf.Tensor> = {};
    for (const name of this.inputNames) {
      const data = byName[name];
      if (!data) throw new Error(`the export wants an input '${name}' that this app does not produce`);
      feeds[name] = tf.tensor2d(data, [1, data.length], 'int32');
    }
    return feeds;
  }

  /** One L2-normalised embedding per text (the graphs are [1, bucket]: one execute per text, on its bucket's graph). */
  async embed(texts: string[]): Promise<Float32Array[]> {
    const start = now();
    const out: Float32Array[] = [];
    for (const text of texts) {
      const encoded = this.tokenizer.encode(text);
      this.lastSeqLen = encoded.inputIds.length;
      const feeds = this.feeds(encoded);
      const result = this.graphs.get(this.lastSeqLen)!.execute(feeds, this.outputNode) as tf.Tensor;
      try {
        out.push((await result.data()) as Float32Array);
      } finally {
        result.dispose();
        Object.values(feeds).forEach((t) => t.dispose());
      }
    }
    this.lastEmbedMs = now() - start;
    return out;
  }

  async embedOne(text: string): Promise<Float32Array> {
    return (await this.embed([text]))[0];
  }

  dispose(): void {
    this.graphs.forEach((g) => g.dispose()); // shared weights: the first dispose frees them, the rest are no-ops
  }
}
