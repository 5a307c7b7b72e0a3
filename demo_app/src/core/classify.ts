/**
 * A text classifier: an edgebert TF.js export of a `…ForSequenceClassification` model (task text-classification,
 * output `logits` [1, num_labels]) plus its tokenizer. `classify(text)` returns every label of the manifest with its
 * softmax probability, best first.
 *
 * Platform-neutral like model.ts (tfjs-core + converter only, the model source injected as an IOHandler or URL);
 * the caller picks and initialises the backend before loading.
 */
import * as tf from '@tensorflow/tfjs-core';
import { loadGraphModel, type GraphModel } from '@tensorflow/tfjs-converter';

import type { ModelFiles } from './model';
import { EdgeTokenizer } from './tokenizer';
import type { ExportManifest } from './types';

export const LOGITS_OUTPUT = 'logits';
export const TEXT_CLASSIFICATION = 'text-classification';

export interface LabelScore {
  label: string;
  /** Softmax probability over the labels. */
  score: number;
  /** The label's index in the logits (its id in the model's id2label). */
  index: number;
}

/** The logits output's labels in index order, or an error saying why the export is not a classifier. */
export function classifierLabels(manifest: ExportManifest): string[] {
  if (manifest.target !== 'tfjs') {
    throw new Error(`classify needs a TF.js export (edgebert export --target tfjs), got target '${manifest.target}'`);
  }
  if (manifest.task !== TEXT_CLASSIFICATION) {
    throw new Error(`classify needs a ${TEXT_CLASSIFICATION} export, this one computes '${manifest.task ?? 'feature-extraction'}'`);
  }
  const logits = manifest.outputs.find((o) => o.name === LOGITS_OUTPUT);
  if (!logits?.labels?.length || !manifest.target_details?.output_nodes?.[LOGITS_OUTPUT]) {
    throw new Error(`the export's edgebert.json has no '${LOGITS_OUTPUT}' output with labels; re-export it`);
  }
  return logits.labels;
}

/** Numerically stable softmax. */
export function softmax(logits: ArrayLike<number>): Float32Array {
  const values = Array.from(logits);
  const max = Math.max(...values);
  const exps = values.map((v) => Math.exp(v - max));
  const sum = exps.reduce((a, b) => a + b, 0);
  return Float32Array.from(exps, (e) => e / sum);
}

/** Every label with its probability, best first. */
export function rankLabels(logits: ArrayLike<number>, labels: string[]): LabelScore[] {
  if (logits.length !== labels.length) throw new Error(`${logits.length} logits for ${labels.length} labels`);
  const probs = softmax(logits);
  return labels.map((label, index) => ({ label, score: probs[index], index })).sort((a, b) => b.score - a.score);
}

export class Classifier {
  private constructor(
    readonly manifest: ExportManifest,
    readonly tokenizer: EdgeTokenizer,
    readonly labels: string[],
    private readonly model: GraphModel,
  ) {}

  static async load(files: ModelFiles): Promise<Classifier> {
    const labels = classifierLabels(files.manifest);
    const { manifest } = files;
    const tokenizer = new EdgeTokenizer(files.tokenizerJson, files.tokenizerConfig, {
      seqLen: manifest.seq_len,
      doLowerCase: manifest.model?.do_lower_case,
    });
    return new Classifier(manifest, tokenizer, labels, await loadGraphModel(files.source));
  }

  /** The model's logits for one text (tokenised to the export's fixed length). */
  async logits(text: string): Promise<Float32Array> {
    const enc = this.tokenizer.encode(text);
    const data: Record<string, Int32Array> = {
      input_ids: enc.inputIds,
      attention_mask: enc.attentionMask,
      token_type_ids: enc.tokenTypeIds,
    };
    const feeds = Object.fromEntries(
      this.manifest.inputs.map(({ name }) => [name, tf.tensor2d(data[name], [1, data[name].length], 'int32')]),
    );
    const result = this.model.execute(feeds, this.manifest.target_details.output_nodes[LOGITS_OUTPUT]) as tf.Tensor;
    try {
      return (await result.data()) as Float32Array;
    } finally {
      result.dispose();
      Object.values(feeds).forEach((t) => t.dispose());
    }
  }

  /** Every label with its softmax score, best first. */
  async classify(text: string): Promise<LabelScore[]> {
    return rankLabels(await this.logits(text), this.labels);
  }

  dispose(): void {
    this.model.dispose();
  }
}
