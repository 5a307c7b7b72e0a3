/** The core without a model: manifest checks, bucket choice, tokenizer details, adapter refusals, tensor names. */
import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { describe, test } from 'node:test';

import { ManifestError, inputTensors, lowercaseOutside, pickBucket, rankLabels, readManifest, transformersJsOptions, type ExportManifest } from '../src/index.js';
import { onnxruntime } from '../src/adapters/onnxruntime.js';
import { executorch, outputShape } from '../src/adapters/executorch.js';
import { fastTflite } from '../src/adapters/fast-tflite.js';
import { litertjs } from '../src/adapters/litertjs.js';
import { namesTensor, tensorIndex } from '../src/adapters/tensor-names.js';
import { readExportFiles } from '../src/node.js';

function manifest(overrides: Partial<ExportManifest> = {}): ExportManifest {
  return {
    kind: 'export',
    name: 'tiny',
    target: 'onnx',
    task: 'text-classification',
    seq_len: 32,
    static_shape: false,
    inputs: ['input_ids', 'attention_mask', 'token_type_ids'].map((name) => ({ name, dtype: 'int64', shape: ['batch', 'sequence'] })),
    outputs: [{ name: 'logits', dtype: 'float32', shape: ['batch', 2], labels: ['no', 'yes'] }],
    model: { hidden_size: 32, do_lower_case: true },
    ...overrides,
  };
}

describe('readManifest', () => {
  test('reads task, inputs and dtypes, buckets, outputs and labels', () => {
    const info = readManifest(manifest());
    assert.equal(info.task, 'text-classification');
    assert.deepEqual(info.inputs.map((i) => `${i.name}:${i.dtype}`), ['input_ids:int64', 'attention_mask:int64', 'token_type_ids:int64']);
    assert.equal(info.buckets, null);
    assert.deepEqual(info.labels, ['no', 'yes']);
    const tfjs = readManifest(manifest({ target: 'tfjs', static_shape: true, seq_len: 32, buckets: [{ seq_len: 32, model_file: 'model.json' }, { seq_len: 16, model_file: 'model-16.json' }] }));
    assert.deepEqual(tfjs.buckets?.map((b) => [b.seqLen, b.modelFile]), [[16, 'model-16.json'], [32, 'model.json']]);
  });

  const refusals: [string, Partial<ExportManifest>, RegExp][] = [
    ['a task it cannot run', { task: 'token-classification' }, /computes 'token-classification'; edgebert-runtime runs feature-extraction, text-classification, fill-mask exports/],
    ['a model directory', { kind: 'model' }, /a 'model' directory, not an export/],
    ['a classifier without labels', { outputs: [{ name: 'logits', shape: ['batch', 2] }] }, /'logits' output has no labels/],
    ['an embedder without its output', { task: 'feature-extraction' }, /needs the output\(s\) sentence_embedding; this one lists logits/],
    ['an input dtype it cannot build', { inputs: [{ name: 'input_ids', dtype: 'float32', shape: [1, 32] }] }, /input 'input_ids' has dtype 'float32'; int32 or int64 expected/],
    ['an input it does not produce', { inputs: [{ name: 'pixel_values', dtype: 'int32', shape: [1, 32] }] }, /input 'pixel_values' is not one of/],
    ['buckets that do not end at seq_len', { static_shape: true, buckets: [{ seq_len: 16 }] }, /longest bucket is not seq_len 32/],
  ];
  for (const [what, overrides, message] of refusals) {
    test(`refuses ${what} in one line`, () => {
      assert.throws(() => readManifest(manifest(overrides)), (err: Error) => err instanceof ManifestError && message.test(err.message) && !err.message.includes('\n'));
    });
  }
});

describe('transformersJsOptions', () => {
  const laidOut = (recorded: object): ExportManifest =>
    manifest({ target_details: { layout: 'transformers.js', model_file: 'onnx/model.onnx', transformers_js: { version: '4.3.1', dtype: 'fp32', ...recorded } } });

  test("reads the call options the export's manifest records", () => {
    assert.deepEqual(transformersJsOptions(laidOut({ pipeline_options: { pooling: 'cls', normalize: false } })), { pooling: 'cls', normalize: false });
    assert.deepEqual(transformersJsOptions(laidOut({ pipeline_options: { top_k: null } })), { top_k: null });
  });

  const refusals: [string, ExportManifest, RegExp][] = [
    ["edgebert's own layout", manifest({ target_details: { layout: 'edgebert' } }), /tiny's output: it is not laid out for transformers.js \(export with --layout transformers.js\)/],
    ['an output no call computes, saying why', laidOut({ pipeline_options: null, no_pipeline_options: "its pooling is 'max'" }), /tiny's output: its pooling is 'max'$/],
    ['a manifest that records none', laidOut({}), /it records none \(export it again\)/],
  ];
  for (const [what, m, message] of refusals) {
    test(`refuses ${what} in one line`, () => {
      assert.throws(() => transformersJsOptions(m), (err: Error) => err instanceof ManifestError && message.test(err.message) && !err.message.includes('\n'));
    });
  }
});

test('an adapter refuses an export of another target, naming both', () => {
  const session = { inputNames: [], outputNames: [], run: async () => ({}) };
  const factory = onnxruntime({ session, Tensor: class { constructor() { throw new Error('unused'); } } as never });
  assert.throws(() => factory(readManifest(manifest({ target: 'tflite' }))), /onnxruntime adapter runs 'onnx' exports \(edgebert export --target onnx\); tiny is a 'tflite' export/);
});

test("the LiteRT.js adapter's name says its accelerator and its wasm threads", () => {
  const info = readManifest(manifest({ target: 'tflite', static_shape: true, inputs: ['input_ids', 'attention_mask'].map((name) => ({ name, dtype: 'int32', shape: [1, 32] })) }));
  const signature = {
    getInputDetails: () => info.inputs.map(({ name }) => ({ name: `serving_default_${name}:0`, dtype: 'int32', shape: [1, 32] })),
    getOutputDetails: () => [{ name: 'StatefulPartitionedCall:0_logits', dtype: 'float32', shape: [1, 2] }],
    run: async () => ({}),
  };
  const named = (options: object) => {
    const model = { signatures: { serving_default: signature }, options, delete() {} };
    return (litertjs({ model: model as never, Tensor: Object as never })(info) as { name: string }).name;
  };
  assert.equal(named({ accelerator: 'wasm', cpuOptions: { numThreads: 1 } }), 'litertjs (wasm)');
  assert.equal(named({ accelerator: 'wasm', cpuOptions: { numThreads: 2 } }), 'litertjs (wasm, 2 threads)');
  assert.equal(named({ accelerator: 'webgpu', cpuOptions: { numThreads: 2 } }), 'litertjs (webgpu)');
});

test('the LiteRT.js adapter keeps the recurring inputs across calls and makes input_ids per call', async () => {
  const info = readManifest(manifest({
    target: 'tflite', static_shape: true, task: 'feature-extraction', seq_len: 4, buckets: [{ seq_len: 4, signature: 'serving_default' }],
    inputs: ['input_ids', 'attention_mask', 'token_type_ids'].map((name) => ({ name, dtype: 'int32', shape: [1, 'bucket'] })),
    outputs: [{ name: 'sentence_embedding', dtype: 'float32', shape: [1, 2] }],
  }));
  const live = new Set<FakeTensor>();
  let made = 0;
  class FakeTensor {
    readonly type = { dtype: 'float32', layout: { dimensions: [1, 2] } };
    constructor(readonly values: Int32Array | Float32Array, readonly shape: number[]) {
      made++;
      live.add(this);
    }
    async data() {
      return this.values as Float32Array;
    }
    delete() {
      assert.ok(live.delete(this), 'a tensor deleted twice');
    }
  }
  const seen: string[] = [];
  const signature = {
    getInputDetails: () => info.inputs.map(({ name }) => ({ name: `serving_default_${name}:0`, dtype: 'int32', shape: [1, 4] })),
    getOutputDetails: () => [{ name: 'StatefulPartitionedCall:0_sentence_embedding', dtype: 'float32', shape: [1, 2] }],
    run: async (feeds: Record<string, FakeTensor>) => {
      seen.push(Object.entries(feeds).map(([k, t]) => `${k.replace('serving_default_', '').replace(':0', '')}=${[...t.values]}`).join(' '));
      const ids = feeds['serving_default_input_ids:0'].values;
      return { 'StatefulPartitionedCall:0_sentence_embedding': new FakeTensor(Float32Array.of(ids[1], ids[2]), [1, 2]) };
    },
  };
  const model = { signatures: { serving_default: signature }, options: { accelerator: 'wasm' }, delete() {} };
  const runtime = litertjs({ model: model as never, Tensor: FakeTensor as never })(info) as Awaited<ReturnType<ReturnType<typeof litertjs>>>;
  const feed = (ids: number[], mask: number[]) =>
    [['input_ids', ids], ['attention_mask', mask], ['token_type_ids', [0, 0, 0, 0]]].map(([name, v]) => ({ name, dtype: 'int32', shape: [1, 4], data: Int32Array.from(v as number[]) })) as never;
  const outs = [];
  for (const [ids, mask] of [[[101, 7, 102, 0], [1, 1, 1, 0]], [[101, 8, 102, 0], [1, 1, 1, 0]], [[101, 9, 10, 102], [1, 1, 1, 1]]]) {
    outs.push([...(await runtime.run(feed(ids, mask), ['sentence_embedding'])).sentence_embedding.data]);
  }
  assert.deepEqual(outs, [[7, 102], [8, 102], [9, 10]]);
  assert.deepEqual(seen, [
    'input_ids=101,7,102,0 attention_mask=1,1,1,0 token_type_ids=0,0,0,0',
    'input_ids=101,8,102,0 attention_mask=1,1,1,0 token_type_ids=0,0,0,0',
    'input_ids=101,9,10,102 attention_mask=1,1,1,1 token_type_ids=0,0,0,0',
  ]);
  // 3 calls: 3 input_ids and 3 outputs, deleted after each call; 2 masks and 1 token_type_ids kept until dispose
  assert.equal(made, 9);
  assert.equal(live.size, 3);
  runtime.dispose();
  assert.equal(live.size, 0);
});

test('the ONNX adapter refuses a session of another model', () => {
  const session = { inputNames: ['input_ids', 'attention_mask'], outputNames: ['logits'], run: async () => ({}) };
  const factory = onnxruntime({ session, Tensor: Object as never });
  assert.throws(() => factory(readManifest(manifest())), /takes inputs \[input_ids, attention_mask\], tiny's manifest lists \[input_ids, attention_mask, token_type_ids\]/);
});

test('pickBucket: the smallest bucket that holds the text, else the longest', () => {
  assert.equal(pickBucket(5, [32, 16, 64]), 16);
  assert.equal(pickBucket(16, [16, 32]), 16);
  assert.equal(pickBucket(17, [16, 32]), 32);
  assert.equal(pickBucket(90, [16, 32]), 32);
});

test('inputs are built in the manifest order and dtype', () => {
  const info = readManifest(manifest({ inputs: [{ name: 'attention_mask', dtype: 'int32', shape: [] }, { name: 'input_ids', dtype: 'int64', shape: [] }] }));
  const encoded = { inputIds: Int32Array.of(2, 7, 3), attentionMask: Int32Array.of(1, 1, 1), tokenTypeIds: Int32Array.of(0, 0, 0), length: 3, start: 0, truncated: false };
  const [mask, ids] = inputTensors(encoded, info);
  assert.ok(mask.data instanceof Int32Array && mask.name === 'attention_mask');
  assert.ok(ids.data instanceof BigInt64Array && ids.name === 'input_ids');
  assert.deepEqual([...ids.data], [2n, 7n, 3n]);
  assert.deepEqual(ids.shape, [1, 3]);
});

test('lowercasing keeps the special tokens the tokenizer matches first', () => {
  assert.equal(lowercaseOutside('The [MASK] of ΣΟΦΟΣ', ['[MASK]']), 'the [MASK] of σοφοσ');
  assert.equal(lowercaseOutside('A.B', []), 'a.b');
});

test('LiteRT tensor names map to the manifest names', () => {
  assert.ok(namesTensor('seq_16_input_ids', 'input_ids'));
  assert.ok(namesTensor('serving_default_sentence_embedding_output:0', 'sentence_embedding'));
  assert.ok(!namesTensor('seq_16_token_type_ids', 'input_ids'));
  assert.throws(() => tensorIndex(['a_logits', 'b_logits'], 'logits', 'x'), /several tensor\(s\) named 'logits'/);
});

test('ExecuTorch output shapes for one text', () => {
  assert.deepEqual(outputShape({ name: 'last_hidden_state', dtype: 'float32', shape: ['batch', 'sequence', 32] }, 7), [1, 7, 32]);
  assert.deepEqual(outputShape({ name: 'logits', dtype: 'float32', shape: ['batch', 3] }, 7), [1, 3]);
});

test('rankLabels: best first, probabilities sum to one', () => {
  const ranked = rankLabels([0, 2, 1], ['a', 'b', 'c']);
  assert.deepEqual(ranked.map((r) => r.label), ['b', 'c', 'a']);
  assert.ok(Math.abs(ranked.reduce((s, r) => s + r.score, 0) - 1) < 1e-6);
});

describe('native adapters refuse a model that is not the export', () => {
  const tflite = readManifest(manifest({ target: 'tflite', static_shape: true, inputs: ['input_ids', 'attention_mask'].map((name) => ({ name, dtype: 'int32', shape: [1, 32] })) }));
  const tensors = (dataType: string, length = 32) => ['serving_default_input_ids', 'serving_default_attention_mask'].map((name) => ({ name, dataType, shape: [1, length] }));
  const tfliteModel = (inputs: { name: string; dataType: string; shape: number[] }[]) => ({
    inputs,
    outputs: [{ name: 'serving_default_logits_output', dataType: 'float32', shape: [1, 2] }],
    run: async () => [],
  });

  test('fast-tflite: an input dtype other than the manifest says', () => {
    assert.throws(() => fastTflite(tfliteModel(tensors('int64')))(tflite), /input 'serving_default_input_ids' is int64, the manifest says int32/);
  });

  test('fast-tflite: an input the manifest does not list', () => {
    const inputs = [...tensors('int32'), { name: 'serving_default_position_ids', dataType: 'int32', shape: [1, 32] }];
    assert.throws(() => fastTflite(tfliteModel(inputs))(tflite), /input 'serving_default_position_ids' is none of input_ids, attention_mask/);
  });

  test('executorch: a program with another number of outputs', () => {
    const et = readManifest(manifest({ target: 'executorch' }));
    const model = {
      schema: { forward: { inputs: [], outputs: [{ kind: 'Tensor', dtype: 'float32' as const }, { kind: 'Tensor', dtype: 'float32' as const }] } },
      execute: () => [],
      dispose: () => {},
    };
    assert.throws(() => executorch({ model, tensor: () => { throw new Error('unused'); } })(et), /'forward' returns 2 outputs, tiny's manifest lists 1: is it this export's model.pte\?/);
  });

  test('executorch: a program needing a kernel library the runtime does not declare', () => {
    const fourBit = readManifest(manifest({ target: 'executorch', target_details: { kernel_libraries: ['quantized'] } }));
    const model = { schema: { forward: { inputs: [], outputs: [{ kind: 'Tensor', dtype: 'float32' as const }] } }, execute: () => [], dispose: () => {} };
    const tensor = () => { throw new Error('unused'); };
    assert.throws(() => executorch({ model, tensor })(fourBit), /model.pte calls kernels of quantized, which this runtime does not declare \(kernelLibraries: \[\]\)/);
    assert.doesNotThrow(() => executorch({ model, tensor, kernelLibraries: ['quantized'] })(fourBit));
    const int8 = readManifest(manifest({ target: 'executorch', target_details: { kernel_libraries: [] } }));
    assert.doesNotThrow(() => executorch({ model, tensor })(int8));
  });
});

test('reading a directory that is not an export names the missing files', () => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'not-an-export-'));
  fs.writeFileSync(path.join(dir, 'edgebert.json'), '{}');
  try {
    assert.throws(() => readExportFiles(dir), new RegExp(`${dir} is not an edgebert export: tokenizer.json, tokenizer_config.json missing`));
  } finally {
    fs.rmSync(dir, { recursive: true });
  }
});
