/**
 * The shared core on an export with sequence-length buckets: each text is padded to the smallest bucket that holds
 * it, runs on that bucket's graph, and matches PyTorch; the graphs share one copy of the weights.
 * Driven by tests/test_buckets.py, which exports a model with buckets and writes the PyTorch reference to the JSON
 * file named by EDGEBERT_DEMO_BUCKETS ({model_dir, cases: [{text, input_ids, bucket, embedding}]}).
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';

import * as tf from '@tensorflow/tfjs-core';

import { cosine } from '../../src/core/search';
import { loadEmbedder, readJson, useBackend } from '../../src/node';

interface BucketFixture {
  model_dir: string;
  weights: number;
  cases: { text: string; input_ids: number[]; bucket: number; embedding: number[] }[];
}

const fixtureFile = process.env.EDGEBERT_DEMO_BUCKETS;

test('a bucketed export: smallest bucket per text, PyTorch parity, shared weights', { skip: fixtureFile ? false : 'EDGEBERT_DEMO_BUCKETS not set (run tests/test_buckets.py)' }, async () => {
  const fixture = readJson<BucketFixture>(fixtureFile!);
  await useBackend('wasm');
  const before = tf.memory().numTensors;
  const embedder = await loadEmbedder(fixture.model_dir);
  try {
    assert.deepEqual(embedder.buckets, [...new Set(fixture.cases.map((c) => c.bucket))].sort((a, b) => a - b));
    // One copy of the shard's weights for every graph (each graph alone would hold them all again).
    assert.equal(tf.memory().numTensors - before, fixture.weights);
    for (const c of fixture.cases) {
      const enc = embedder.tokenizer.encode(c.text);
      assert.equal(enc.inputIds.length, c.bucket, `"${c.text}" padded to ${enc.inputIds.length}, not ${c.bucket}`);
      assert.deepEqual(Array.from(enc.inputIds.subarray(0, enc.length)), c.input_ids);
      const [v] = await embedder.embed([c.text]);
      assert.equal(embedder.lastSeqLen, c.bucket);
      const cos = cosine(v, c.embedding);
      assert.ok(cos >= 0.9999, `"${c.text}": cos ${cos} vs PyTorch`);
    }
  } finally {
    embedder.dispose();
  }
});
