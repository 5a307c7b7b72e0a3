/**
 * The manifest reader: what an app needs of an export's `edgebert.json` (docs/manifest.md in the edgebert
 * repository), checked once at load, so that a manifest this package cannot run fails with one clear message.
 */

import type { PaddingSide } from './tokenizer.js';

/** The tasks this package runs: `embed`, `classify` and `fillMask`. */
export const TASKS = ['feature-extraction', 'text-classification', 'fill-mask'] as const;
export type Task = (typeof TASKS)[number];

/** The inputs an edgebert export may take, as EdgeTokenizer produces them. */
export const INPUT_NAMES = ['input_ids', 'attention_mask', 'token_type_ids'] as const;
export type InputName = (typeof INPUT_NAMES)[number];
export type InputDtype = 'int32' | 'int64';

/** The model file of each target's own layout (an ONNX export laid out for transformers.js names its file). */
const MODEL_FILES: Record<string, string> = { onnx: 'model.onnx', tflite: 'model.tflite', tfjs: 'model.json', executorch: 'model.pte' };

/**
 * The export's model file, relative to its folder: the manifest's `target_details.model_file` (an ONNX export made
 * with `--layout transformers.js`: `onnx/model.onnx`, `onnx/model_quantized.onnx`, …), else the target's own name.
 */
export function modelFileOf(manifest: Pick<ExportManifest, 'target' | 'target_details'> | null | undefined): string {
  return manifest?.target_details?.model_file ?? MODEL_FILES[manifest?.target ?? ''] ?? 'model';
}

/**
 * The transformers.js pipeline call options that compute what an ONNX export laid out with `--layout transformers.js`
 * computes, as its manifest records them (`target_details.transformers_js.pipeline_options`, written by `edgebert
 * export`): feature-extraction's `{ pooling, normalize }` (the pipeline pools `last_hidden_state` itself),
 * text-classification's `{ top_k: null }`. A ManifestError (one line) for an export in another layout, one whose
 * output no call computes (the manifest says why) or one made before the manifest recorded them.
 */
export function transformersJsOptions(manifest: Pick<ExportManifest, 'name' | 'target_details'>): Record<string, unknown> {
  const details = manifest.target_details?.transformers_js as { pipeline_options?: Record<string, unknown> | null; no_pipeline_options?: string } | undefined;
  const cannot = `transformers.js cannot compute ${manifest.name}'s output`;
  if (!details) fail(`${cannot}: it is not laid out for transformers.js (export with --layout transformers.js)`);
  if (details.pipeline_options === undefined) fail(`${cannot} with options the manifest records: it records none (export it again)`);
  if (details.pipeline_options === null) fail(`${cannot}: ${details.no_pipeline_options ?? 'no pipeline options do'}`);
  return { ...details.pipeline_options };
}

/** The outputs each task reads (other outputs, e.g. `last_hidden_state`, are not fetched). */
export const TASK_OUTPUTS: Record<Task, readonly string[]> = {
  'feature-extraction': ['sentence_embedding'],
  'text-classification': ['logits'],
  'fill-mask': ['top_ids', 'top_scores'],
};

/** `edgebert.json` of an export, as written (only the fields read here are typed). */
export interface ExportManifest {
  kind?: string;
  name: string;
  target: string;
  quantization?: string;
  task?: string;
  seq_len: number;
  static_shape?: boolean;
  buckets?: { seq_len: number; model_file?: string; signature?: string }[] | null;
  inputs: { name: string; dtype: string; shape: (number | string)[] }[];
  outputs: { name: string; dtype?: string; shape?: (number | string)[]; dim?: number; labels?: string[]; normalized?: boolean }[];
  model: { family?: string; hidden_size: number; layers?: number; do_lower_case?: boolean | null; padding_side?: string; top_k?: number };
  target_details?: { output_nodes?: Record<string, string>; weight_shards?: string[]; model_file?: string; layout?: string; [key: string]: unknown };
  parity?: { min_cosine: number; threshold?: number; passed?: boolean };
}

export interface InputSpec {
  name: InputName;
  dtype: InputDtype;
}

export interface OutputSpec {
  name: string;
  dtype: string;
  shape: (number | string)[];
}

export interface Bucket {
  seqLen: number;
  /** TF.js: the bucket's graph file (`model-16.json`; the longest is `model.json`). */
  modelFile?: string;
  /** TFLite: the bucket's signature (`seq_16`; the longest is `serving_default`). */
  signature?: string;
}

/** An export as this package runs it. */
export interface ExportInfo {
  manifest: ExportManifest;
  name: string;
  target: string;
  task: Task;
  /** The model file, relative to the export's folder (`modelFileOf`): what the app hands its runtime. */
  modelFile: string;
  /** The longest input: texts are truncated to it. */
  seqLen: number;
  /** Fixed-shape exports: the lengths it runs, ascending (one for an export without buckets). Null: any length. */
  buckets: Bucket[] | null;
  /** In the order the export lists them. */
  inputs: InputSpec[];
  /** Every output of the export, in the manifest's order. */
  outputs: OutputSpec[];
  /** The outputs the task reads. */
  taskOutputs: readonly string[];
  /** text-classification: the class names in logits order. */
  labels: string[];
  doLowerCase: boolean;
  /** The side Python's tokenizer pads (manifest `model.padding_side`); undefined: the tokenizer files decide. */
  paddingSide?: PaddingSide;
}

/** A manifest this package cannot run. */
export class ManifestError extends Error {
  override name = 'ManifestError';
}

function fail(message: string): never {
  throw new ManifestError(`edgebert.json: ${message}`);
}

function checkedTask(manifest: ExportManifest): Task {
  const task = manifest.task ?? 'feature-extraction';
  if (!(TASKS as readonly string[]).includes(task)) {
    fail(`this export computes '${task}'; edgebert-runtime runs ${TASKS.join(', ')} exports`);
  }
  return task as Task;
}

function checkedInputs(manifest: ExportManifest): InputSpec[] {
  if (!Array.isArray(manifest.inputs) || !manifest.inputs.length) fail('no inputs listed; re-export the model');
  return manifest.inputs.map(({ name, dtype }) => {
    if (!(INPUT_NAMES as readonly string[]).includes(name)) fail(`input '${name}' is not one of ${INPUT_NAMES.join(', ')}`);
    if (dtype !== 'int32' && dtype !== 'int64') fail(`input '${name}' has dtype '${dtype}'; int32 or int64 expected`);
    return { name: name as InputName, dtype };
  });
}

function checkedOutputs(manifest: ExportManifest, task: Task): OutputSpec[] {
  const outputs = (manifest.outputs ?? []).map((o) => ({ name: o.name, dtype: o.dtype ?? 'float32', shape: o.shape ?? [] }));
  const missing = TASK_OUTPUTS[task].filter((name) => !outputs.some((o) => o.name === name));
  if (missing.length) fail(`a ${task} export needs the output(s) ${missing.join(', ')}; this one lists ${outputs.map((o) => o.name).join(', ') || 'none'}`);
  return outputs;
}

function checkedLabels(manifest: ExportManifest, task: Task): string[] {
  if (task !== 'text-classification') return [];
  const labels = manifest.outputs.find((o) => o.name === 'logits')?.labels;
  if (!labels?.length) fail("the 'logits' output has no labels; re-export the classifier");
  return labels;
}

function checkedPaddingSide(manifest: ExportManifest): PaddingSide | undefined {
  const side = manifest.model?.padding_side;
  if (side === undefined || side === 'left' || side === 'right') return side;
  fail(`model.padding_side is ${JSON.stringify(side)}; expected left or right`);
}

function checkedBuckets(manifest: ExportManifest): Bucket[] | null {
  if (manifest.static_shape === false) return null;
  const listed = manifest.buckets?.length ? manifest.buckets : [{ seq_len: manifest.seq_len }];
  const buckets = listed
    .map((b) => ({ seqLen: b.seq_len, modelFile: 'model_file' in b ? b.model_file : undefined, signature: 'signature' in b ? b.signature : undefined }))
    .sort((a, b) => a.seqLen - b.seqLen);
  if (buckets.some((b) => !Number.isInteger(b.seqLen) || b.seqLen < 2)) fail('bucket lengths must be integers ≥ 2');
  if (buckets[buckets.length - 1].seqLen !== manifest.seq_len) fail(`the longest bucket is not seq_len ${manifest.seq_len}`);
  return buckets;
}

/** Check a parsed `edgebert.json` and describe the export; throws ManifestError naming what is wrong. */
export function readManifest(json: unknown): ExportInfo {
  if (!json || typeof json !== 'object') fail('not a JSON object');
  const manifest = json as ExportManifest;
  if (manifest.kind !== undefined && manifest.kind !== 'export') {
    fail(`this is a '${manifest.kind}' directory, not an export: run edgebert export on it first`);
  }
  if (typeof manifest.target !== 'string') fail("no 'target'; is this an edgebert export's manifest?");
  if (!Number.isInteger(manifest.seq_len) || manifest.seq_len < 2) fail(`seq_len must be an integer ≥ 2, got ${manifest.seq_len}`);
  const task = checkedTask(manifest);
  return {
    manifest,
    name: manifest.name,
    target: manifest.target,
    task,
    modelFile: modelFileOf(manifest),
    seqLen: manifest.seq_len,
    buckets: checkedBuckets(manifest),
    inputs: checkedInputs(manifest),
    outputs: checkedOutputs(manifest, task),
    taskOutputs: TASK_OUTPUTS[task],
    labels: checkedLabels(manifest, task),
    doLowerCase: Boolean(manifest.model?.do_lower_case),
    paddingSide: checkedPaddingSide(manifest),
  };
}

/** Refuse an export of another target than the adapter runs. */
export function requireTarget(info: ExportInfo, target: string, adapter: string): void {
  if (info.target !== target) {
    throw new ManifestError(
      `${adapter} runs '${target}' exports (edgebert export --target ${target}); ${info.name} is a '${info.target}' export`,
    );
  }
}
