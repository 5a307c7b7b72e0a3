/**
 * EdgeModel: an edgebert export (its manifest and tokenizer) on one runtime adapter, with the task calls
 * `embed(texts)`, `classify(text)` and `fillMask(text)`. Each text is tokenised, padded to the smallest length the
 * runtime runs that holds it (no padding on a dynamic-shape runtime), and run on its own ([1, length]).
 */
import { readManifest, type ExportInfo, type Task } from './manifest.js';
import { inputTensors, requireOutput, type OutputTensor, type Runtime, type RuntimeFactory } from './runtime.js';
import { maskPredictions, numbers, rankLabels, type LabelScore, type MaskPrediction } from './tasks.js';
import { EdgeTokenizer, type EncodedText, type LibraryTokenizerClass } from './tokenizer.js';

export interface ModelFiles {
  /** The export's edgebert.json, parsed. */
  manifest: unknown;
  /** The export's tokenizer.json and tokenizer_config.json, parsed. */
  tokenizerJson: object;
  tokenizerConfig: object;
  /** The runtime adapter, e.g. `onnxruntime({ session, Tensor })` from `edgebert-runtime/onnxruntime`. */
  runtime: RuntimeFactory;
  /** Another copy of @huggingface/tokenizers' Tokenizer (an app that bundles its own). */
  tokenizerClass?: LibraryTokenizerClass;
}

const now = (): number => (typeof performance !== 'undefined' ? performance.now() : Date.now());

/** The tokenizer for what the runtime runs: its lengths (fixed shapes) or any length up to seq_len (dynamic). */
function tokenizerFor(info: ExportInfo, runtime: Runtime, files: ModelFiles): EdgeTokenizer {
  const lengths = runtime.lengths;
  const options = { doLowerCase: info.doLowerCase, paddingSide: info.paddingSide, tokenizerClass: files.tokenizerClass };
  if (lengths === null) return new EdgeTokenizer(files.tokenizerJson, files.tokenizerConfig, { ...options, seqLen: info.seqLen, dynamic: true });
  if (!lengths.length) throw new Error(`${runtime.name} reports no sequence length it can run`);
  return new EdgeTokenizer(files.tokenizerJson, files.tokenizerConfig, { ...options, seqLen: Math.max(...lengths), buckets: lengths });
}

function maskToken(tokenizerConfig: object): string {
  const token = (tokenizerConfig as { mask_token?: unknown }).mask_token;
  if (typeof token === 'string') return token;
  if (token && typeof token === 'object' && typeof (token as { content?: unknown }).content === 'string') return (token as { content: string }).content;
  return '[MASK]';
}

export class EdgeModel {
  /** Wall time of the last task call (tokenisation included), milliseconds. */
  lastRunMs = 0;
  /** The padded length of the last text run. */
  lastSeqLen = 0;

  private constructor(
    readonly info: ExportInfo,
    readonly tokenizer: EdgeTokenizer,
    readonly runtime: Runtime,
    private readonly tokenizerConfig: object,
  ) {}

  /** Check the manifest, start the runtime adapter, build the tokenizer for the lengths it runs. */
  static async load(files: ModelFiles): Promise<EdgeModel> {
    const info = readManifest(files.manifest);
    const runtime = await files.runtime(info);
    return new EdgeModel(info, tokenizerFor(info, runtime, files), runtime, files.tokenizerConfig);
  }

  get task(): Task {
    return this.info.task;
  }

  /** The lengths texts are padded to (ascending), or null: each text's own length (dynamic shapes). */
  get lengths(): readonly number[] | null {
    return this.runtime.lengths;
  }

  /** The outputs of one text (tokenised here); `outputs` default to what the task reads. */
  async run(text: string, outputs: readonly string[] = this.info.taskOutputs): Promise<{ encoded: EncodedText; outputs: Record<string, OutputTensor> }> {
    const encoded = this.tokenizer.encode(text);
    this.lastSeqLen = encoded.inputIds.length;
    return { encoded, outputs: await this.runtime.run(inputTensors(encoded, this.info), outputs) };
  }

  private requireTask(task: Task, call: string): void {
    if (this.info.task !== task) {
      throw new Error(`${call} needs a ${task} export; ${this.info.name} computes ${this.info.task}`);
    }
  }

  private async output(text: string, name: string): Promise<OutputTensor> {
    return requireOutput((await this.run(text)).outputs, name, this.runtime.name);
  }

  /** One sentence embedding per text (the export's pooling; L2-normalised when its manifest says so). */
  async embed(texts: readonly string[]): Promise<Float32Array[]> {
    this.requireTask('feature-extraction', 'embed');
    const start = now();
    const out: Float32Array[] = [];
    for (const text of texts) out.push(Float32Array.from(numbers((await this.output(text, 'sentence_embedding')).data)));
    this.lastRunMs = now() - start;
    return out;
  }

  /** Every label with its softmax probability, best first. */
  async classify(text: string): Promise<LabelScore[]> {
    this.requireTask('text-classification', 'classify');
    const start = now();
    const logits = await this.output(text, 'logits');
    this.lastRunMs = now() - start;
    return rankLabels(numbers(logits.data), this.info.labels);
  }

  /** For each mask token in `text`, the export's top-k tokens with their probabilities, best first. */
  async fillMask(text: string): Promise<MaskPrediction[]> {
    this.requireTask('fill-mask', 'fillMask');
    const mask = maskToken(this.tokenizerConfig);
    const maskId = this.tokenizer.tokenToId(mask);
    if (maskId === undefined) throw new Error(`the tokenizer has no mask token ${mask}`);
    const start = now();
    const { encoded, outputs } = await this.run(text);
    const real = encoded.inputIds.subarray(encoded.start, encoded.start + encoded.length);
    const positions = [...real].flatMap((id, i) => (id === maskId ? [encoded.start + i] : []));
    if (!positions.length) throw new Error(`fillMask needs a text with the mask token ${mask}${encoded.truncated ? ' (the text was cut to fit)' : ''}`);
    const ids = requireOutput(outputs, 'top_ids', this.runtime.name);
    const scores = requireOutput(outputs, 'top_scores', this.runtime.name);
    const k = ids.shape[ids.shape.length - 1];
    this.lastRunMs = now() - start;
    return maskPredictions(ids.data, scores.data, k, positions, (id) => this.tokenizer.idToToken(id));
  }

  dispose(): void {
    this.runtime.dispose();
  }
}
