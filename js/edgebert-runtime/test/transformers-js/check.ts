/** transformers.js's results on an export against edgebert's (Node side of the Node and Chromium tests). */
import assert from 'node:assert/strict';

import { softmax } from '../../src/index.js';
import { assertClose, cosine, type TransformersJsExport } from '../helpers.js';
import type { CaseResult } from '../results.js';
import type { PipelineResult } from './results.js';

export const MIN_COSINE = 0.9999;
export const SCORE_TOLERANCE = 1e-4;

function scoresByLabel(exp: TransformersJsExport, probabilities: ArrayLike<number>): Record<string, number> {
  return Object.fromEntries(exp.labels.map((label, i) => [label, probabilities[i]]));
}

/** How far transformers.js is from edgebert over an export's texts: the lowest cosine, the largest score difference. */
export interface Distance {
  minCosine: number;
  maxScoreDiff: number;
}

/** One text's outputs against a reference's (and against edgebert-runtime's, `edge`), folded into `distance`. */
function compare(exp: TransformersJsExport, got: PipelineResult, reference: Record<string, number[]>, what: string, distance: Distance, edge?: CaseResult): void {
  if (exp.task === 'feature-extraction') {
    const cos = cosine(got.embedding!, reference.sentence_embedding);
    assert.ok(cos >= MIN_COSINE, `${what}: cosine ${cos} to edgebert's runner < ${MIN_COSINE}`);
    const edgeCos = edge ? cosine(got.embedding!, edge.embedding!) : 1;
    assert.ok(edgeCos >= MIN_COSINE, `${what}: cosine ${edgeCos} to edgebert-runtime < ${MIN_COSINE}`);
    distance.minCosine = Math.min(distance.minCosine, cos, edgeCos);
    return;
  }
  const want = softmax(reference.logits);
  const wantByLabel = scoresByLabel(exp, want);
  const ranked = got.ranked!;
  assert.equal(ranked.length, exp.labels.length, `${what}: every label`);
  assert.equal(ranked[0].label, exp.labels[want.indexOf(Math.max(...want))], `${what}: top label`);
  const references = [wantByLabel, ...(edge ? [scoresByLabel(exp, edge.scores!)] : [])];
  if (edge) assert.equal(ranked[0].label, exp.labels[edge.best!], `${what}: top label vs edgebert-runtime`);
  for (const [k, byLabel] of references.entries()) {
    const want_ = ranked.map((r) => byLabel[r.label]);
    assertClose(ranked.map((r) => r.score), want_, SCORE_TOLERANCE, `${what}: label scores vs ${k ? 'edgebert-runtime' : "edgebert's runner"}`);
    distance.maxScoreDiff = Math.max(distance.maxScoreDiff, ...ranked.map((r, i) => Math.abs(r.score - want_[i])));
  }
}

/**
 * Texts within seq_len: transformers.js feeds Python's ids and computes edgebert's outputs. A longer text: it feeds
 * the first seq_len ids (its tokenizer cuts without keeping the final separator) and computes what edgebert's runner
 * computes on exactly those ids. Returns how far it was at worst.
 */
export function checkPipelineResults(exp: TransformersJsExport, got: PipelineResult[], edge?: CaseResult[]): Distance {
  assert.equal(got.length, exp.cases.length);
  const distance: Distance = { minCosine: 1, maxScoreDiff: 0 };
  exp.cases.forEach((c, i) => {
    const what = JSON.stringify(c.text.slice(0, 40));
    if (c.cut) {
      assert.deepEqual(got[i].ids, c.cut.input_ids, `${what}: transformers.js cuts the ids at ${exp.seq_len}`);
      assert.notEqual(got[i].ids.at(-1), c.input_ids.at(-1), `${what}: the final separator is cut`);
      compare(exp, got[i], c.cut.outputs, `${what} (cut)`, distance);
      return;
    }
    assert.deepEqual(got[i].ids, c.input_ids, `${what}: token ids`);
    if (edge) assert.deepEqual(edge[i].ids, c.input_ids, `${what}: edgebert-runtime's token ids`);
    compare(exp, got[i], c.outputs as Record<string, number[]>, what, distance, edge?.[i]);
  });
  return distance;
}

export function describeDistance(exp: TransformersJsExport, d: Distance): string {
  return exp.task === 'feature-extraction' ? `lowest cosine ${d.minCosine}` : `largest label score difference ${d.maxScoreDiff.toExponential(2)}`;
}
