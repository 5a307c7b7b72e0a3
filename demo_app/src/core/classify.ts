/**
 * A text classifier: an edgebert export of a `…ForSequenceClassification` model (task text-classification, output
 * `logits` [1, num_labels]) plus its tokenizer, through edgebert-runtime. `classify(text)` returns every label of the
 * manifest with its softmax probability, best first. The runtime is a setting, as for the Embedder (model.ts).
 */
import { numbers, type EdgeModel, type LabelScore } from 'edgebert-runtime';

import { loadEdgeModel, type ModelFiles } from './model';
import type { EdgeTokenizer } from './tokenizer';
import type { ExportManifest } from './types';

export { rankLabels, softmax, type LabelScore } from 'edgebert-runtime';

export const LOGITS_OUTPUT = 'logits';
export const TEXT_CLASSIFICATION = 'text-classification';

export class Classifier {
  private constructor(
    readonly manifest: ExportManifest,
    private readonly model: EdgeModel,
  ) {}

  static async load(files: ModelFiles): Promise<Classifier> {
    return new Classifier(files.manifest, await loadEdgeModel(files, TEXT_CLASSIFICATION));
  }

  get tokenizer(): EdgeTokenizer {
    return this.model.tokenizer;
  }

  /** The logits output's labels in index order (the manifest's). */
  get labels(): string[] {
    return this.model.info.labels;
  }

  /** The model's logits for one text. */
  async logits(text: string): Promise<Float32Array> {
    const { outputs } = await this.model.run(text, [LOGITS_OUTPUT]);
    return Float32Array.from(numbers(outputs[LOGITS_OUTPUT].data));
  }

  /** Every label with its softmax score, best first. */
  async classify(text: string): Promise<LabelScore[]> {
    return this.model.classify(text);
  }

  dispose(): void {
    this.model.dispose();
  }
}
