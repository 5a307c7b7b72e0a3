/**
 * transformers.js (@huggingface/transformers) searching the demo's notes, for the benchmark: an edgebert ONNX export
 * laid out with `edgebert export --layout transformers.js`, loaded by `pipeline('feature-extraction', model,
 * { dtype })` and called with the options that give edgebert's own vectors: the ones its manifest records, as the
 * export summary prints them (edgebert-runtime's transformersJsOptions reads them). A query = the pipeline on the
 * text (its own tokenizer) + rank the notes. The caller passes its `pipeline` (transformers.js's Node build in Node,
 * its web build in the page).
 */
import { transformersJsOptions, type ExportManifest } from 'edgebert-runtime';

import { noteText, topK } from '../src/core/search';
import type { Note } from '../src/core/types';

/** The onnxruntime-web build transformers.js's web build loads (the benchmark serves it beside its page). */
export const ORT_WASM = 'ort-wasm-simd-threaded.asyncify';

/** The call options that give edgebert's sentence vector (the manifest's `target_details.transformers_js.pipeline_options`). */
export interface PoolingOptions {
  pooling: 'mean' | 'cls';
  normalize: boolean;
}

/** What the benchmark uses of a feature-extraction pipeline. */
export interface FeatureExtractor {
  (text: string, options: PoolingOptions): Promise<{ data: ArrayLike<number> }>;
  dispose(): Promise<void>;
}

export type PipelineFunction = (task: 'feature-extraction', model: string, options: object) => Promise<unknown>;

/** The parts of a transformers.js-layout manifest read here. */
export type TransformersJsManifest = Pick<ExportManifest, 'name' | 'target_details'> & {
  target_details: { transformers_js?: { dtype: string } };
};

/** The notes searched with transformers.js: their vectors by the same pipeline, ranked by cosine as NoteIndex does. */
export class TransformersJsSearch {
  private constructor(
    private readonly extractor: FeatureExtractor,
    private readonly options: PoolingOptions,
    private readonly notes: Note[],
    private readonly vectors: Float32Array[],
  ) {}

  /** `model` as `pipeline` takes it (a folder in Node, a name under env.localModelPath in a page). */
  static async load(
    pipeline: PipelineFunction,
    model: string,
    manifest: TransformersJsManifest,
    notes: Note[],
    sessionOptions?: object,
  ): Promise<TransformersJsSearch> {
    const options = transformersJsOptions(manifest) as unknown as PoolingOptions;
    const dtype = manifest.target_details.transformers_js?.dtype;
    const extractor = (await pipeline('feature-extraction', model, { dtype, ...(sessionOptions && { session_options: sessionOptions }) })) as FeatureExtractor;
    const vectors: Float32Array[] = [];
    for (const note of notes) vectors.push(Float32Array.from((await extractor(noteText(note), options)).data));
    return new TransformersJsSearch(extractor, options, notes, vectors);
  }

  /** The ids of the `k` best notes for `query`, best first. */
  async search(query: string, k: number): Promise<string[]> {
    const vector = (await this.extractor(query, this.options)).data;
    return topK(vector, this.vectors, k).map(([i]) => this.notes[i].id);
  }

  async dispose(): Promise<void> {
    await this.extractor.dispose();
  }
}
