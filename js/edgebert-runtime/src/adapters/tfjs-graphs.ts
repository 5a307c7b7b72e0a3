/**
 * Loading an edgebert TF.js export's graphs: one per sequence-length bucket over one weight shard, the weights decoded
 * once and shared (GraphModel.loadWithWeightMap, tfjs-converter 4.x), each graph given only the weights its nodes
 * name. Structural types only: the app passes its own tfjs, so the backend it set up is the one that runs.
 */

/** What a model.json and the artifacts loaded from it both carry besides the topology and the weights. */
interface GraphMetadata {
  format?: unknown;
  generatedBy?: unknown;
  convertedBy?: unknown;
  signature?: unknown;
  userDefinedMetadata?: unknown;
  modelInitializer?: unknown;
}

/** A model.json as the converter writes it (tf.io.ModelJSON). */
export interface GraphModelJson extends GraphMetadata {
  modelTopology: unknown;
  weightsManifest: { paths: string[]; weights: unknown[] }[];
}

/** tf.io.ModelArtifacts, as far as this module reads them. */
export interface GraphArtifacts extends GraphMetadata {
  modelTopology?: unknown;
  weightSpecs?: unknown[];
  weightData?: unknown;
}

/** tf.io.IOHandler (load only). */
export interface GraphIOHandler {
  load?: () => Promise<GraphArtifacts>;
}

/** Where a graph comes from: an IOHandler (bundleResourceIO, a file handler, …) or the URL of its json. */
export type GraphSource = GraphIOHandler | string;

/**
 * The weights of `shared` (one export's decoded shard) that a graph's nodes name: the same tensors, in a map of
 * this graph's own. tfjs' executor copies and walks its whole weight map on every execute(), and the shard lists
 * the weights of every bucket graph (377 entries where a 16-token graph of the small student needs 128): the
 * smaller map saves ~0.2 ms a call (~4 % of a 16-token call, Node wasm; edgebert's benchmarks/README.md).
 */
export function ownWeights<T>(topology: unknown, shared: Record<string, T>): Record<string, T> {
  const t = topology as { library?: { function?: unknown[] }; node?: { name: string }[] };
  if (t.library?.function?.length) return shared; // functions (control flow) name their own nodes: keep all
  const names = new Set((t.node ?? []).map((n) => n.name));
  return Object.fromEntries(Object.entries(shared).filter(([name]) => names.has(name)));
}

/** What a graph's model.json says, as model artifacts (without the weight bytes, which live in the shard). */
export function graphArtifacts(modelJson: GraphModelJson): GraphArtifacts {
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
 * An IOHandler of one bucket's graph without its weights (they come from another graph of the export): what an
 * app whose bundle holds the shard once gives for the buckets after the first.
 */
export function graphOnly(modelJson: GraphModelJson): GraphIOHandler {
  return { load: async () => graphArtifacts(modelJson) };
}
