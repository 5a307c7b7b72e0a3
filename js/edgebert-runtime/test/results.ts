/** What a model computes for each case of an export, as plain JSON (it crosses from Chromium to Node). No Node imports. */
import type { EdgeModel } from '../src/index.js';

export interface CaseResult {
  ids: number[];
  seqLen: number;
  embedding?: number[];
  /** Label probabilities in index order, and the best label's index. */
  scores?: number[];
  best?: number;
  maskId?: number;
  masks?: { position: number; ids: number[]; scores: number[]; tokens: string[] }[];
}

export async function resultsOf(model: EdgeModel, texts: readonly string[]): Promise<CaseResult[]> {
  const results: CaseResult[] = [];
  for (const text of texts) {
    const ids = model.tokenizer.ids(text);
    if (model.task === 'feature-extraction') {
      const [embedding] = await model.embed([text]);
      results.push({ ids, seqLen: model.lastSeqLen, embedding: Array.from(embedding) });
    } else if (model.task === 'text-classification') {
      const ranked = await model.classify(text);
      const scores = [...ranked].sort((a, b) => a.index - b.index).map((r) => r.score);
      results.push({ ids, seqLen: model.lastSeqLen, scores, best: ranked[0].index });
    } else {
      const predictions = await model.fillMask(text);
      const masks = predictions.map((p) => ({ position: p.position, ids: p.candidates.map((t) => t.id), scores: p.candidates.map((t) => t.score), tokens: p.candidates.map((t) => t.token) }));
      results.push({ ids, seqLen: model.lastSeqLen, maskId: model.tokenizer.tokenToId('[MASK]'), masks });
    }
  }
  return results;
}
