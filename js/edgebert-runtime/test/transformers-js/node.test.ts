/**
 * transformers.js (@huggingface/transformers, Node build on onnxruntime-node) loading edgebert's ONNX exports laid
 * out with `--layout transformers.js` as they are: `pipeline(task, folder)` with no options (config.json names the
 * dtype, hence the file), called as the export summary prints it; against edgebert's Python runner on the same file
 * and edgebert-runtime's onnxruntime adapter in Node on the same folder.
 */
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';

import { env, pipeline } from '@huggingface/transformers';
import * as ort from 'onnxruntime-node';

import { EdgeModel, transformersJsOptions, type ExportManifest } from '../../src/index.js';
import { onnxruntime } from '../../src/adapters/onnxruntime.js';
import { readExportFiles } from '../../src/node.js';
import { exportsFor, type TransformersJsExport } from '../helpers.js';
import { resultsOf, type CaseResult } from '../results.js';
import { checkPipelineResults, describeDistance } from './check.js';
import { pipelineResults, type TextPipeline } from './results.js';

env.allowRemoteModels = false; // the export's folder only: nothing from a hub

async function edgebertRuntime(dir: string, texts: string[]): Promise<CaseResult[]> {
  const files = readExportFiles(dir);
  const session = await ort.InferenceSession.create(files.modelPath);
  const model = await EdgeModel.load({ ...files, runtime: onnxruntime({ session, Tensor: ort.Tensor, name: 'onnxruntime-node' }) });
  try {
    return await resultsOf(model, texts);
  } finally {
    model.dispose();
  }
}

const exports = exportsFor<TransformersJsExport>('transformers.js');
if (exports.length) {
  describe('transformers.js in Node vs edgebert', () => {
    for (const exp of exports) {
      test(`${exp.name} on transformers.js (Node)`, async (t) => {
        const texts = exp.cases.map((c) => c.text);
        const pipe = (await pipeline(exp.task, exp.dir)) as TextPipeline; // a folder path is read as it is
        try {
          assert.equal(pipe.model.sessions.model.config.device, 'cpu');
          const options = transformersJsOptions(readExportFiles(exp.dir).manifest as ExportManifest); // as the export summary prints them
          const distance = checkPipelineResults(exp, await pipelineResults(pipe, exp.task, texts, options), await edgebertRuntime(exp.dir, texts));
          t.diagnostic(describeDistance(exp, distance));
        } finally {
          await pipe.dispose();
        }
      });
    }
  });
}
