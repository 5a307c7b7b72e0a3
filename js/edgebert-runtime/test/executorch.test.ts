/**
 * The react-native-executorch adapter against what ExecuTorch's runtime itself sees (tests/test_js_runtime.py): a
 * stand-in Model whose `forward` schema has the program's input and output dtypes, that accepts only the tensors
 * Python fed for each text (dtype, shape [1, T], values, order) and output tensors of the program's dtypes and the
 * runner's shapes, and fills them with what edgebert's ExecuTorch runner returned.
 */
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';

import { EdgeModel, softmax } from '../src/index.js';
import { executorch, type EtDType, type EtModelLike, type EtTensorLike } from '../src/adapters/executorch.js';
import { readExportFiles } from '../src/node.js';
import { assertClose, exportsFor, type NativeExport } from './helpers.js';

type Meta = { dtype: EtDType; max_sizes: number[] };
type Native = { method: string; inputs: Meta[]; outputs: Meta[] };
type Call = { text: string; inputs: number[][]; outputs: { shape: number[]; data: number[] }[] };
type EtArray = Float32Array | Uint8Array | Int32Array | BigInt64Array;

class FakeTensor implements EtTensorLike {
  disposed = false;
  readonly data: EtArray;
  constructor(readonly dtype: EtDType, readonly shape: number[], src?: EtArray) {
    const n = shape.reduce((a, b) => a * b, 1);
    this.data = dtype === 'int64' ? new BigInt64Array(n) : dtype === 'int32' ? new Int32Array(n) : new Float32Array(n);
    if (src) {
      assert.equal(src.constructor, this.data.constructor, `a ${dtype} tensor from a ${src.constructor.name}`);
      assert.equal(src.length, n, `${src.length} values for shape [${shape}]`);
      this.data.set(src as never);
    }
  }
  getData<T extends EtArray>(dst: T): T {
    assert.equal(dst.byteLength, this.data.byteLength, 'getData into an array of another size');
    dst.set(this.data as never);
    return dst;
  }
  dispose(): void {
    this.disposed = true;
  }
}

class ReplayProgram implements EtModelLike<FakeTensor> {
  expected: Call | null = null;
  readonly tensors: FakeTensor[] = [];
  readonly schema: EtModelLike<FakeTensor>['schema'];
  constructor(readonly native: Native) {
    const spec = (m: Meta) => ({ kind: 'Tensor', dtype: m.dtype });
    this.schema = { [native.method]: { inputs: native.inputs.map(spec), outputs: native.outputs.map(spec) } };
  }
  tensor = (dtype: EtDType, shape: number[], src?: EtArray): FakeTensor => {
    const t = new FakeTensor(dtype, shape, src);
    this.tensors.push(t);
    return t;
  };
  execute(method: string, inputs: FakeTensor[], outputs: FakeTensor[]): unknown[] {
    const call = this.expected;
    assert.ok(call, 'execute() with no expected call');
    assert.equal(method, this.native.method);
    assert.equal(inputs.length, this.native.inputs.length, 'number of inputs');
    inputs.forEach((t, i) => {
      const meta = this.native.inputs[i];
      assert.equal(t.dtype, meta.dtype, `dtype of input ${i}`);
      assert.deepEqual(t.shape, [1, call.inputs[i].length], `shape of input ${i}`);
      assert.ok(t.shape[1] <= meta.max_sizes[1], `input ${i} longer than the program takes`);
      assert.deepEqual(Array.from(t.data as ArrayLike<number | bigint>, Number), call.inputs[i], `input ${i} of ${JSON.stringify(call.text)}`);
    });
    assert.equal(outputs.length, this.native.outputs.length, 'number of output tensors');
    outputs.forEach((t, k) => {
      assert.equal(t.dtype, this.native.outputs[k].dtype, `dtype of output ${k}`);
      assert.deepEqual(t.shape, call.outputs[k].shape, `shape of output ${k}`);
      const values = call.outputs[k].data;
      t.data.set((t.dtype === 'int64' ? values.map((v) => BigInt(v)) : values) as never);
    });
    return outputs;
  }
  dispose(): void {}
}

describe('react-native-executorch adapter vs ExecuTorch', () => {
  for (const exp of exportsFor<NativeExport>('executorch')) {
    test(exp.name, async () => {
      const program = new ReplayProgram(exp.native as Native);
      const files = readExportFiles(exp.dir);
      const model = await EdgeModel.load({ ...files, runtime: executorch({ model: program, tensor: program.tensor }) });
      const names = model.info.outputs.map((o) => o.name);
      for (const call of exp.calls as Call[]) {
        program.expected = call;
        if (exp.task === 'text-classification') {
          const ranked = [...(await model.classify(call.text))].sort((a, b) => a.index - b.index);
          assertClose(ranked.map((r) => r.score), softmax(call.outputs[names.indexOf('logits')].data), 1e-6, call.text);
        } else {
          const [embedding] = await model.embed([call.text]);
          assertClose(embedding, call.outputs[names.indexOf('sentence_embedding')].data, 0, call.text);
        }
      }
      assert.ok(program.tensors.length > 0 && program.tensors.every((t) => t.disposed), 'every tensor the adapter made is disposed');
    });
  }
});
