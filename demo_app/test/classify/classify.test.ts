/**
 * classify(text) on a text-classification TF.js export against PyTorch: the export and the reference logits are
 * made by tests/test_export_heads.py (a tiny classifier, transformers' own logits), which runs this file with
 * EDGEBERT_CLASSIFIER_DIR (the export) and EDGEBERT_CLASSIFIER_REFERENCE (JSON: labels, texts, logits).
 * Kept out of test/*.test.ts (the app's own suite, which needs no classifier): `npm run test:classify`.
 */
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';

import { Classifier, rankLabels, softmax } from '../../src/core/classify';
import { loadClassifier, readJson, useBackend } from '../../src/node';

interface ClassifierReference {
  labels: string[];
  texts: string[];
  logits: number[][];
}

const MODEL = process.env.EDGEBERT_CLASSIFIER_DIR;
const REFERENCE = process.env.EDGEBERT_CLASSIFIER_REFERENCE;
const MISSING = MODEL && REFERENCE ? false : 'set EDGEBERT_CLASSIFIER_DIR and EDGEBERT_CLASSIFIER_REFERENCE (tests/test_export_heads.py does)';

test('softmax sums to one and ranks labels best first', () => {
  const probs = softmax([1, 3, 2]);
  assert.ok(Math.abs(probs.reduce((a, b) => a + b, 0) - 1) < 1e-6);
  assert.deepEqual(
    rankLabels([1, 3, 2], ['a', 'b', 'c']).map((s) => s.label),
    ['b', 'c', 'a'],
  );
  assert.throws(() => rankLabels([1, 2], ['a']), /2 logits for 1 labels/);
});

describe('classifier export', { skip: MISSING }, () => {
  let classifier: Classifier;
  let reference: ClassifierReference;

  before(async () => {
    await useBackend('wasm');
    reference = readJson<ClassifierReference>(REFERENCE as string);
    classifier = await loadClassifier(MODEL as string);
  });
  after(() => classifier?.dispose());

  test('labels come from the manifest, in id order', () => {
    assert.deepEqual(classifier.labels, reference.labels);
  });

  test('logits match PyTorch and classify ranks by them', async () => {
    for (const [i, text] of reference.texts.entries()) {
      const logits = await classifier.logits(text);
      const expected = reference.logits[i];
      expected.forEach((v, j) => assert.ok(Math.abs(logits[j] - v) < 1e-3, `"${text}" logit ${j}: ${logits[j]} vs ${v}`));
      const ranked = await classifier.classify(text);
      const best = expected.indexOf(Math.max(...expected));
      assert.equal(ranked[0].label, reference.labels[best]);
      assert.equal(ranked.length, reference.labels.length);
      assert.ok(ranked.every((r, k) => k === 0 || ranked[k - 1].score >= r.score));
      const want = softmax(expected);
      ranked.forEach((r) => assert.ok(Math.abs(r.score - want[r.index]) < 1e-3));
    }
  });
});
