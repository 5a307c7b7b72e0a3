/**
 * An export bundled into an app whose bundler needs every file named up front (React Native's Metro bundles only
 * files named in static `require()` calls): `scripts/bundle-table.mjs`, run by `scripts/prepare.sh`, writes
 * `src/mobile/bundledGraphs.ts`, one `require()` per bucket graph and one for the weight shard. `bundledFiles`
 * turns that table into the core's `ModelFiles`, so the app picks the bucket per text like the web page and Node.
 */
import type * as tf from '@tensorflow/tfjs-core';

import { graphOnly, type ModelFiles, type ModelSource } from './model';
import type { ExportManifest } from './types';

export interface BundleTable {
  /** Graph file (model.json, model-16.json, …) -> its parsed JSON, one static require() each. */
  graphs: Record<string, tf.io.ModelJSON>;
  /** The export's one weight shard, as the bundler gives it (Metro: an asset id). */
  weights: unknown;
}

/** The graph files an export's manifest lists, shortest bucket first (one length: model.json). */
export function graphFiles(manifest: ExportManifest): string[] {
  const buckets: { seq_len: number; model_file?: string }[] = manifest.buckets?.length ? manifest.buckets : [{ seq_len: manifest.seq_len }];
  return [...buckets].sort((a, b) => a.seq_len - b.seq_len).map((b) => b.model_file ?? 'model.json');
}

/**
 * ModelFiles of a bundled export: the shortest bucket's graph is loaded with the weights (`withWeights`, e.g.
 * tfjs-react-native's bundleResourceIO), the others topology-only (`graphOnly`), so the shard is read once.
 */
export function bundledFiles(
  manifest: ExportManifest,
  tokenizerJson: object,
  tokenizerConfig: object,
  table: BundleTable,
  withWeights: (modelJson: tf.io.ModelJSON, weights: unknown) => tf.io.IOHandler,
): ModelFiles {
  const files = graphFiles(manifest);
  const missing = files.filter((f) => !table.graphs[f]);
  if (missing.length) {
    throw new Error(`the app's bundle table lacks ${missing.join(', ')} of the export's buckets: re-run scripts/prepare.sh`);
  }
  const source = (file: string): ModelSource =>
    file === files[0] ? withWeights(table.graphs[file], table.weights) : graphOnly(table.graphs[file]);
  return { manifest, tokenizerJson, tokenizerConfig, source: source(files[files.length - 1]), bucketSource: source };
}
