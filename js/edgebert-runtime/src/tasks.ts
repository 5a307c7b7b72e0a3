/** What each task makes of the model's outputs: labels with scores (classification), top-k tokens (fill-mask). */
import type { OutputArray } from './runtime.js';

export interface LabelScore {
  label: string;
  /** Softmax probability over the labels. */
  score: number;
  /** The label's index in the logits (its id in the model's id2label). */
  index: number;
}

export interface TokenScore {
  token: string;
  id: number;
  /** Softmax probability over the vocabulary, as the export computed it. */
  score: number;
}

export interface MaskPrediction {
  /** The [MASK] token's position in the input ids. */
  position: number;
  /** Best first. */
  candidates: TokenScore[];
}

/** Cosine similarity of two vectors of one length (0 when either is all zeros). */
export function cosine(a: ArrayLike<number>, b: ArrayLike<number>): number {
  if (a.length !== b.length) throw new Error(`cannot compare vectors of length ${a.length} and ${b.length}`);
  let dot = 0;
  let na = 0;
  let nb = 0;
  for (let i = 0; i < a.length; i++) {
    dot += a[i] * b[i];
    na += a[i] * a[i];
    nb += b[i] * b[i];
  }
  return na === 0 || nb === 0 ? 0 : dot / Math.sqrt(na * nb);
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
export function rankLabels(logits: ArrayLike<number>, labels: readonly string[]): LabelScore[] {
  if (logits.length !== labels.length) throw new Error(`${logits.length} logits for ${labels.length} labels`);
  const probs = softmax(logits);
  return labels.map((label, index) => ({ label, score: probs[index], index })).sort((a, b) => b.score - a.score);
}

/** Numbers of any output array (int64 ids as numbers: vocabulary ids fit). */
export function numbers(data: OutputArray): number[] {
  return Array.from(data as ArrayLike<number | bigint>, Number);
}

/**
 * Fill-mask's `top_ids` / `top_scores` ([1, T, k], best first) at each of the `positions`: the k candidates there.
 * `token` names an id (the tokenizer's vocabulary).
 */
export function maskPredictions(
  topIds: OutputArray,
  topScores: OutputArray,
  k: number,
  positions: readonly number[],
  token: (id: number) => string,
): MaskPrediction[] {
  const ids = numbers(topIds);
  const scores = numbers(topScores);
  return positions.map((position) => ({
    position,
    candidates: ids.slice(position * k, position * k + k).map((id, j) => ({ id, token: token(id), score: scores[position * k + j] })),
  }));
}
