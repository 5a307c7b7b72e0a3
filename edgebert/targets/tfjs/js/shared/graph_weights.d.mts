// Types of graph_weights.mjs (the demo app's TypeScript imports it).

/** The entries of `shared` whose names a graph's nodes name (all of them when the graph has functions). */
export function ownWeights<T>(topology: unknown, shared: Record<string, T>): Record<string, T>;
