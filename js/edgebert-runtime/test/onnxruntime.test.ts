/** The ONNX Runtime adapter on onnxruntime-node (the InferenceSession API onnxruntime-web and -react-native share). */
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';

import * as ort from 'onnxruntime-node';

import { EdgeModel } from '../src/index.js';
import { onnxruntime } from '../src/adapters/onnxruntime.js';
import { readExportFiles } from '../src/node.js';
import { exportsFor, type TorchExport } from './helpers.js';
import { checkResults, resultsOf } from './torch-runtimes.js';

async function load(dir: string): Promise<EdgeModel> {
  const files = readExportFiles(dir);
  const session = await ort.InferenceSession.create(files.modelPath);
  return EdgeModel.load({ ...files, runtime: onnxruntime({ session, Tensor: ort.Tensor, name: 'onnxruntime-node' }) });
}

describe('onnxruntime-node vs PyTorch', () => {
  for (const exp of exportsFor<TorchExport>('onnxruntime-node')) {
    test(exp.name, async () => {
      const model = await load(exp.dir);
      try {
        assert.equal(model.lengths, null); // dynamic shapes: each text at its own length
        checkResults(exp, await resultsOf(model, exp.cases.map((c) => c.text)), model.lengths);
      } finally {
        model.dispose();
      }
    });
  }

  const [any] = exportsFor<TorchExport>('onnxruntime-node').filter((e) => e.task === 'feature-extraction');
  if (any) {
    test('a task call the export does not compute is refused', async () => {
      const model = await load(any.dir);
      await assert.rejects(model.classify('hi'), /classify needs a text-classification export; .* computes feature-extraction/);
      model.dispose();
    });
  }
});
