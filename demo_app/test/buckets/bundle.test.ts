/**
 * The React Native bundle table (scripts/bundle-table.mjs, run by prepare.sh) on an export with buckets: one static
 * require() per bucket graph and one for the shard, and the mobile loader built on it (src/core/bundle.ts) picks the
 * bucket per text and matches PyTorch, reading the shard once. Metro's require() is stood in for: JSON files parse,
 * the shard is an asset handle that the stand-in for bundleResourceIO reads from disk.
 * Driven by tests/test_buckets.py (EDGEBERT_DEMO_BUCKETS: {model_dir, cases: [{text, bucket, embedding}]}).
 */
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { test } from 'node:test';

import * as tf from '@tensorflow/tfjs-core';
import { transformSync } from 'esbuild';

import { bundledFiles, graphFiles, type BundleTable } from '../../src/core/bundle';
import { Embedder } from '../../src/core/model';
import { cosine } from '../../src/core/search';
import type { ExportManifest } from '../../src/core/types';
import { APP_DIR, readJson, useBackend } from '../../src/node';

interface BucketFixture {
  model_dir: string;
  cases: { text: string; bucket: number; embedding: number[] }[];
}

const fixtureFile = process.env.EDGEBERT_DEMO_BUCKETS;

/** Evaluate the generated TypeScript module with `require` resolved relative to its own file. */
function evaluateTable(file: string, required: string[]): BundleTable {
  const { code } = transformSync(fs.readFileSync(file, 'utf8'), { loader: 'ts', format: 'cjs' });
  const fakeRequire = (spec: string): unknown => {
    const target = path.resolve(path.dirname(file), spec);
    required.push(path.basename(target));
    return target.endsWith('.json') ? readJson<object>(target) : { asset: target };
  };
  const module = { exports: {} as { bundleTable?: BundleTable } };
  new Function('require', 'module', 'exports', code)(fakeRequire, module, module.exports);
  return module.exports.bundleTable!;
}

test('the React Native bundle table: a require() per bucket graph, the bucket picked per text', { skip: fixtureFile ? false : 'EDGEBERT_DEMO_BUCKETS not set (run tests/test_buckets.py)' }, async () => {
  const fixture = readJson<BucketFixture>(fixtureFile!);
  const manifest = readJson<ExportManifest>(path.join(fixture.model_dir, 'edgebert.json'));
  const out = path.join(fs.mkdtempSync(path.join(os.tmpdir(), 'bundle-table-')), 'bundledGraphs.ts');
  execFileSync(process.execPath, [path.join(APP_DIR, 'scripts', 'bundle-table.mjs'), '--model-dir', fixture.model_dir, '--out', out]);
  const required: string[] = [];
  const table = evaluateTable(out, required);
  const files = graphFiles(manifest);
  assert.deepEqual(Object.keys(table.graphs), files);
  assert.deepEqual(required, [...files, manifest.target_details.weight_shards[0]]);

  let shardReads = 0;
  const withWeights = (modelJson: tf.io.ModelJSON, weights: unknown): tf.io.IOHandler => ({
    load: async () => {
      shardReads += 1;
      const data = fs.readFileSync((weights as { asset: string }).asset);
      return {
        modelTopology: modelJson.modelTopology,
        signature: modelJson.signature,
        weightSpecs: modelJson.weightsManifest.flatMap((g) => g.weights),
        weightData: data.buffer.slice(data.byteOffset, data.byteOffset + data.byteLength) as ArrayBuffer,
      };
    },
  });
  await useBackend('wasm');
  const tokenizerJson = readJson<object>(path.join(fixture.model_dir, 'tokenizer.json'));
  const tokenizerConfig = readJson<object>(path.join(fixture.model_dir, 'tokenizer_config.json'));
  const embedder = await Embedder.load(bundledFiles(manifest, tokenizerJson, tokenizerConfig, table, withWeights));
  try {
    assert.equal(shardReads, 1);
    assert.deepEqual(embedder.buckets, manifest.buckets!.map((b) => b.seq_len));
    for (const c of fixture.cases) {
      const [v] = await embedder.embed([c.text]);
      assert.equal(embedder.lastSeqLen, c.bucket);
      const cos = cosine(v, c.embedding);
      assert.ok(cos >= 0.9999, `"${c.text}": cos ${cos} vs PyTorch`);
    }
    const partial: BundleTable = { graphs: { 'model.json': table.graphs['model.json'] }, weights: table.weights };
    assert.throws(() => bundledFiles(manifest, tokenizerJson, tokenizerConfig, partial, withWeights), /re-run scripts\/prepare.sh/);
  } finally {
    embedder.dispose();
  }
});
