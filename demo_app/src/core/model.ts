/**
 * The embedding model: an edgebert export plus its tokenizer, run through edgebert-runtime (tokenizer, manifest,
 * bucket choice, `embed`). The runtime is a setting (`ModelFiles.runtime`, any edgebert-runtime adapter); without
 * one it is TF.js on the app's tfjs, from `source` / `bucketSource`: an export with sequence-length buckets has one
 * graph per bucket over one weight shard, each text padded to the smallest bucket that holds it and run on that
 * bucket's graph, the weights decoded once and shared by the graphs.
 *
 * Platform-neutral: it imports only @tensorflow/tfjs-core and -converter and edgebert-runtime, and takes the model
 * source as an injected IOHandler (bundleResourceIO in the React Native app, a file handler in Node, a URL in the
 * browser). The caller picks and initialises the tfjs backend (rn-webgl / cpu / wasm) before loading.
 */
import * as tf from '@tensorflow/tfjs-core';
import { GraphModel } from '@tensorflow/tfjs-converter';
import { EdgeModel, type RuntimeFactory } from 'edgebert-runtime';
import { tfjs, type GraphSource } from 'edgebert-runtime/tfjs';

import type { EdgeTokenizer } from './tokenizer';
import type { ExportManifest } from './types';

export { graphArtifacts, graphOnly } from 'edgebert-runtime/tfjs';

export const EMBEDDING_OUTPUT = 'sentence_embedding';

/** Where a TF.js graph comes from: an IOHandler (bundleResourceIO, file, …) or a URL of its json. */
export type ModelSource = GraphSource;

export interface ModelFiles {
  /** The export's edgebert.json. */
  manifest: ExportManifest;
  /** The export's tokenizer.json and tokenizer_config.json, parsed. */
  tokenizerJson: object;
  tokenizerConfig: object;
  /** TF.js: model.json + the weights shard. */
  source?: ModelSource;
  /**
   * TF.js: the source of another graph file of the export (a bucket's `model-16.json`, same shard). Without it only
   * model.json (the longest bucket) is used: every text is padded to the export's longest length.
   */
  bucketSource?: (modelFile: string) => ModelSource;
  /** The runtime setting: an edgebert-runtime adapter (onnxruntime, fastTflite, executorch, tfjs); default TF.js. */
  runtime?: RuntimeFactory;
}

/** The runtime of `files`: its own setting, else TF.js over the app's tfjs and the export's graphs. */
export function runtimeOf(files: ModelFiles): RuntimeFactory {
  if (files.runtime) return files.runtime;
  if (!files.source) throw new Error('ModelFiles needs a runtime or, for TF.js, the source of the export\'s model.json');
  return tfjs({ tf, GraphModel }, { source: files.source, bucketSource: files.bucketSource });
}

/** The export through edgebert-runtime, refused in one line unless it computes `task`. */
export async function loadEdgeModel(files: ModelFiles, task: string): Promise<EdgeModel> {
  const model = await EdgeModel.load({ ...files, runtime: runtimeOf(files) });
  if (model.task !== task) {
    model.dispose();
    throw new Error(`this needs a ${task} export; ${files.manifest.name} computes ${model.task}`);
  }
  return model;
}

export class Embedder {
  private constructor(
    readonly manifest: ExportManifest,
    private readonly model: EdgeModel,
  ) {}

  static async load(files: ModelFiles): Promise<Embedder> {
    return new Embedder(files.manifest, await loadEdgeModel(files, 'feature-extraction'));
  }

  get tokenizer(): EdgeTokenizer {
    return this.model.tokenizer;
  }

  /** Wall time of the last embed() call, tokenisation included, in milliseconds. */
  get lastEmbedMs(): number {
    return this.model.lastRunMs;
  }

  /** The padded length of the last text embedded. */
  get lastSeqLen(): number {
    return this.model.lastSeqLen;
  }

  /** The padded lengths this embedder runs (one graph each); empty when each text runs at its own length. */
  get buckets(): number[] {
    return [...(this.model.lengths ?? [])];
  }

  /** The runtime that runs the export, e.g. "tfjs (wasm)". */
  get runtimeName(): string {
    return this.model.runtime.name;
  }

  get dim(): number {
    return this.manifest.model.hidden_size;
  }

  /** One sentence embedding per text (L2-normalised: the export's sentence_embedding output). */
  async embed(texts: string[]): Promise<Float32Array[]> {
    return this.model.embed(texts);
  }

  async embedOne(text: string): Promise<Float32Array> {
    return (await this.embed([text]))[0];
  }

  dispose(): void {
    this.model.dispose();
  }
}
