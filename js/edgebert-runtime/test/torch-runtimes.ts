/**
 * The package's task calls against PyTorch's outputs, for the runtimes that run here: `resultsOf` runs the cases
 * through a model (in Node, or in Chromium where it is bundled), `checkResults` compares them in Node.
 */
import assert from 'node:assert/strict';

import { softmax } from '../src/index.js';
import { assertClose, cosine, type TorchExport } from './helpers.js';
import type { CaseResult } from './results.js';

export { resultsOf, type CaseResult } from './results.js';

/** Every case: ids equal Python's, outputs within the export's parity of PyTorch, padded to the expected length. */
export function checkResults(exp: TorchExport, results: CaseResult[], lengths: readonly number[] | null): void {
  assert.equal(results.length, exp.cases.length);
  exp.cases.forEach((c, i) => {
    const got = results[i];
    const what = JSON.stringify(c.text);
    assert.deepEqual(got.ids, c.input_ids, `token ids of ${what}`);
    if (exp.task === 'feature-extraction') {
      const cos = cosine(got.embedding!, c.outputs.sentence_embedding as number[]);
      assert.ok(cos >= exp.min_cosine, `cosine ${cos} < ${exp.min_cosine} for ${what}`);
    } else if (exp.task === 'text-classification') {
      const want = softmax(c.outputs.logits as number[]);
      assertClose(got.scores!, want, 1e-4, `label scores of ${what}`);
      assert.equal(got.best, want.indexOf(Math.max(...want)), `top label of ${what}`);
    } else {
      checkFillMask(c, got);
    }
    const tokens = c.input_ids.length;
    assert.equal(got.seqLen, lengths === null ? tokens : lengths.find((l) => l >= tokens), `padded length of ${what}`);
  });
}

function checkFillMask(c: TorchExport['cases'][number], got: CaseResult): void {
  const positions = c.input_ids.flatMap((id, i) => (id === got.maskId ? [i] : []));
  assert.deepEqual(got.masks!.map((m) => m.position), positions);
  const topIds = c.outputs.top_ids as number[][];
  const topScores = c.outputs.top_scores as number[][];
  for (const m of got.masks!) {
    assert.equal(m.ids[0], topIds[m.position][0], `top-1 token at ${m.position}`);
    assertClose(m.scores, topScores[m.position], 1e-4, `top-k scores at ${m.position}`);
  }
}
