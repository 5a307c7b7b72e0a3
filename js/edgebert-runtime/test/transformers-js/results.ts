/**
 * What transformers.js's pipeline computes for an export's texts, as plain JSON (it crosses from Chromium to Node).
 * No Node imports: the browser page bundles it.
 */
import type { FeatureExtractionPipeline, TextClassificationPipeline } from '@huggingface/transformers';

export interface PipelineResult {
  /** The ids its tokenizer feeds the model (truncated as the pipeline truncates: at model_max_length). */
  ids: number[];
  embedding?: number[];
  /** Every label with its probability, best first. */
  ranked?: { label: string; score: number }[];
}

export type TextPipeline = FeatureExtractionPipeline | TextClassificationPipeline;

/** Embeddings of all texts in one call (one padded batch, as a web app calls it), or each text's labels; `options`: the
 * call's (the manifest's `target_details.transformers_js.pipeline_options`). */
export async function pipelineResults(pipe: TextPipeline, task: string, texts: string[], options: object): Promise<PipelineResult[]> {
  const ids = texts.map((text) => Array.from(pipe.tokenizer(text, { truncation: true }).input_ids.data as ArrayLike<bigint>, Number));
  if (task === 'feature-extraction') {
    const rows = (await (pipe as FeatureExtractionPipeline)(texts, options)).tolist() as number[][];
    return texts.map((_, i) => ({ ids: ids[i], embedding: rows[i] }));
  }
  const results: PipelineResult[] = [];
  for (const [i, text] of texts.entries()) {
    const ranked = (await (pipe as TextClassificationPipeline)(text, options)) as { label: string; score: number }[];
    results.push({ ids: ids[i], ranked });
  }
  return results;
}
