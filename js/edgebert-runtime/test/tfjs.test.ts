/** The TF.js adapter on the wasm backend in Node: bucket graphs over one weight shard, and a one-length export. */
import assert from 'node:assert/strict';
import { createRequire } from 'node:module';
import path from 'node:path';
import { before, describe, test } from 'node:test';

import * as tf from '@tensorflow/tfjs-core';
import { GraphModel } from '@tensorflow/tfjs-converter';
import { setWasmPaths } from '@tensorflow/tfjs-backend-wasm';

import { EdgeModel } from '../src/index.js';
import { tfjs } from '../src/adapters/tfjs.js';
import { fileGraphSource, readExportFiles } from '../src/node.js';
import { exportsFor, type TorchExport } from './helpers.js';
import { checkResults, resultsOf } from './torch-runtimes.js';

const exports = exportsFor<TorchExport>('tfjs-wasm');

describe('tfjs (wasm) vs PyTorch', () => {
  before(async () => {
    const wasm = path.dirname(createRequire(import.meta.url).resolve('@tensorflow/tfjs-backend-wasm/dist/tfjs-backend-wasm.wasm'));
    setWasmPaths(wasm + path.sep);
    assert.ok(await tf.setBackend('wasm'), 'the wasm backend failed to start');
  });

  for (const exp of exports) {
    test(exp.name, async () => {
      const runtime = tfjs({ tf, GraphModel }, { source: fileGraphSource(exp.dir), bucketSource: (file) => fileGraphSource(exp.dir, file) });
      const model = await EdgeModel.load({ ...readExportFiles(exp.dir), runtime });
      try {
        assert.equal(model.runtime.name, 'tfjs (wasm)');
        assert.deepEqual(model.lengths, exp.buckets.length ? exp.buckets : [model.info.seqLen]);
        checkResults(exp, await resultsOf(model, exp.cases.map((c) => c.text)), model.lengths);
      } finally {
        model.dispose();
      }
    });
  }
});
