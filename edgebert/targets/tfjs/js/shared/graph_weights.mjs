// The weights of `shared` (one export's decoded shard) that a graph's nodes name: the same tensors, in a map of
// this graph's own. tfjs' executor copies and walks its whole weight map on every execute(), and the shard lists
// the weights of every bucket graph (377 entries where a 16-token graph of the small student needs 128): the
// smaller map saves ~0.2 ms a call (~4 % of a 16-token call, Node wasm; benchmarks/README.md).
// One copy for the Node runner's loader (load_export.mjs) and the demo app's (demo_app/src/core/model.ts).
// `topology`: the graph's model.json modelTopology. Types: graph_weights.d.mts.
export function ownWeights(topology, shared) {
  if (topology.library?.function?.length) return shared; // functions (control flow) name their own nodes: keep all
  const names = new Set((topology.node || []).map((n) => n.name));
  return Object.fromEntries(Object.entries(shared).filter(([name]) => names.has(name)));
}
