/** Checks shared by the runtimes that run here: the package's task calls against PyTorch's outputs. */
import assert from 'node:assert/strict';

import { softmax, type EdgeModel } from '../src/index.js';
import { assertClose, cosine, type TorchExport } from './helpers.js';

/** Every case of `exp` through the model: ids equal Python's, outputs within the export's parity of PyTorch. */
export async function checkAgainstTorch(model: EdgeModel, exp: TorchExport): Promise<void> {
  for (const c of exp.cases) {
    assert.deepEqual(model.tokenizer.ids(c.text), c.input_ids, `token ids of ${JSON.stringify(c.text)}`);
    if (exp.task === 'feature-extraction') {
      const [got] = await model.embed([c.text]);
      const cos = cosine(got, c.outputs.sentence_embedding as number[]);
      assert.ok(cos >= exp.min_cosine, `cosine ${cos} < ${exp.min_cosine} for ${JSON.stringify(c.text)}`);
    } else if (exp.task === 'text-classification') {
      const ranked = await model.classify(c.text);
      const want = softmax(c.outputs.logits as number[]);
      const byIndex = [...ranked].sort((a, b) => a.index - b.index);
      assertClose(byIndex.map((r) => r.score), want, 1e-4, `label scores of ${JSON.stringify(c.text)}`);
      assert.equal(ranked[0].index, want.indexOf(Math.max(...want)));
      assert.deepEqual(byIndex.map((r) => r.label), model.info.labels);
    } else {
      await checkFillMask(model, c);
    }
    assert.equal(model.lastSeqLen, expectedLength(model, c.input_ids.length), `padded length of ${JSON.stringify(c.text)}`);
  }
}

function expectedLength(model: EdgeModel, tokens: number): number {
  const lengths = model.lengths;
  return lengths === null ? tokens : lengths.find((l) => l >= tokens)!;
}

async function checkFillMask(model: EdgeModel, c: TorchExport['cases'][number]): Promise<void> {
  const predictions = await model.fillMask(c.text);
  const maskId = model.tokenizer.tokenToId('[MASK]');
  const positions = c.input_ids.flatMap((id, i) => (id === maskId ? [i] : []));
  assert.deepEqual(predictions.map((p) => p.position), positions);
  const topIds = c.outputs.top_ids as number[][];
  const topScores = c.outputs.top_scores as number[][];
  for (const p of predictions) {
    assert.equal(p.candidates[0].id, topIds[p.position][0], `top-1 token at ${p.position}`);
    assertClose(p.candidates.map((t) => t.score), topScores[p.position], 1e-4, `top-k scores at ${p.position}`);
    assert.equal(p.candidates[0].token, model.tokenizer.idToToken(topIds[p.position][0]));
  }
}
