/**
 * The embedding model: an edgebert TF.js graph model (static int32 [1, seq_len] inputs) plus its tokenizer.
 *
 * Platform-neutral: it imports only @tensorflow/tfjs-core and -converter, and takes the model source as an
 * injected tf.io.IOHandler (bundleResourceIO in the React Native app, a file handler in Node, tf.io.http or a
 * URL in the browser). The caller picks and initialises the backend (rn-webgl / cpu / wasm) before loading.
 */
import * as tf from '@tensorflow/tfjs-core';
import { loadGraphModel, type GraphModel } from '@tensorflow/tfjs-converter';

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

  private constructor(
    readonly manifest: ExportManifest,
    readonly tokenizer: EdgeTokenizer,
    private readonly model: GraphModel,
    private readonly outputNode: string,
    private readonly inputNames: string[],
  ) {}

  static async load(files: ModelFiles): Promise<Embedder> {
    checkManifest(files.manifest);
    const { manifest } = files;
    const tokenizer = new EdgeTokenizer(files.tokenizerJson, files.tokenizerConfig, {
      seqLen: manifest.seq_len,
      doLowerCase: manifest.model?.do_lower_case,
    });
    const model = await loadGraphModel(files.source);
    const inputNames = manifest.inputs.map((i) => i.name);
    return new Embedder(manifest, tokenizer, model, manifest.target_details.output_nodes[EMBEDDING_OUTPUT], inputNames);
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

  /** One L2-normalised embedding per text (the graph is [1, seq_len]: one execute per text). */
  async embed(texts: string[]): Promise<Float32Array[]> {
    const start = now();
    const out: Float32Array[] = [];
    for (const text of texts) {
      const feeds = this.feeds(this.tokenizer.encode(text));
      const result = this.model.execute(feeds, this.outputNode) as tf.Tensor;
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
    this.model.dispose();
  }
}
