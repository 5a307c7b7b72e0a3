/**
 * The react-native-fast-tflite adapter against what LiteRT itself sees (tests/test_js_runtime.py): a stand-in model
 * with the .tflite's first-subgraph tensors (names, dtypes, shapes, in LiteRT's order) that accepts only the input
 * bytes Python fed for each text, in that order, and answers the outputs edgebert's TFLite runner returned.
 */
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';

import { EdgeModel, softmax } from '../src/index.js';
import { fastTflite, type TfliteModelLike, type TfliteTensorLike } from '../src/adapters/fast-tflite.js';
import { readExportFiles } from '../src/node.js';
import { assertClose, exportsFor, type NativeExport } from './helpers.js';

type Native = { inputs: TfliteTensorLike[]; outputs: TfliteTensorLike[] };
type Call = NativeExport['calls'][number] & { outputs: number[][] };

const ARRAYS = {
  float32: Float32Array,
  int32: Int32Array,
  int64: BigInt64Array,
} as const;

function typed(dataType: string, values: number[]): Float32Array | Int32Array | BigInt64Array {
  if (dataType === 'int64') return BigInt64Array.from(values, (v) => BigInt(v));
  const Ctor = ARRAYS[dataType as 'float32' | 'int32'];
  assert.ok(Ctor, `no typed array for ${dataType}`);
  return Ctor.from(values);
}

/** A TfliteModel that replays one expected call at a time. */
class ReplayModel implements TfliteModelLike {
  expected: Call | null = null;
  calls = 0;
  constructor(readonly inputs: TfliteTensorLike[], readonly outputs: TfliteTensorLike[]) {}

  async run(buffers: ArrayBuffer[]): Promise<ArrayBuffer[]> {
    const call = this.expected;
    assert.ok(call, 'run() called with no expected call');
    assert.equal(buffers.length, this.inputs.length, 'number of input buffers');
    buffers.forEach((buffer, i) => {
      const want = typed(this.inputs[i].dataType, call.inputs[i]);
      assert.equal(buffer.byteLength, want.byteLength, `bytes of input ${i} (${this.inputs[i].name}: ${this.inputs[i].dataType} [${this.inputs[i].shape}])`);
      assert.deepEqual(new Uint8Array(buffer), new Uint8Array(want.buffer), `input ${i} (${this.inputs[i].name}) of ${JSON.stringify(call.text)}`);
    });
    this.calls++;
    return this.outputs.map((o, k) => typed(o.dataType, call.outputs[k]).buffer as ArrayBuffer);
  }
}

function outputOf(native: Native, call: Call, name: string): number[] {
  const k = native.outputs.findIndex((o) => new RegExp(`(^|_)${name}(_output)?(:\\d+)?$`).test(o.name));
  assert.ok(k >= 0, `no ${name} among ${native.outputs.map((o) => o.name)}`);
  return call.outputs[k];
}

describe('react-native-fast-tflite adapter vs LiteRT', () => {
  for (const exp of exportsFor<NativeExport>('fast-tflite')) {
    const native = exp.native as Native;
    test(exp.name, async () => {
      const replay = new ReplayModel(native.inputs, native.outputs);
      const files = readExportFiles(exp.dir);
      if (!exp.calls.length) {
        // LiteRT's first subgraph is the shortest bucket: fast-tflite could not run the export's longest length.
        await assert.rejects(EdgeModel.load({ ...files, runtime: fastTflite(replay) }), /runs a \.tflite's first subgraph only; .* takes 16 tokens \(signature seq_16\), not the export's 32: .*--seq-len 32/);
        return;
      }
      const model = await EdgeModel.load({ ...files, runtime: fastTflite(replay) });
      for (const call of exp.calls as Call[]) {
        replay.expected = call;
        if (exp.task === 'text-classification') {
          const ranked = [...(await model.classify(call.text))].sort((a, b) => a.index - b.index);
          assertClose(ranked.map((r) => r.score), softmax(outputOf(native, call, 'logits')), 1e-6, call.text);
        } else {
          const [embedding] = await model.embed([call.text]);
          assertClose(embedding, outputOf(native, call, 'sentence_embedding'), 0, call.text);
        }
      }
      assert.equal(replay.calls, exp.calls.length);
    });
  }
});
