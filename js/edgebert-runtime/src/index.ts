/**
 * edgebert-runtime: run an edgebert export in JavaScript. The core (tokenizer, manifest, buckets, task calls) imports
 * no runtime; adapters live in their own entry points: `edgebert-runtime/tfjs`, `/onnxruntime`, `/fast-tflite`,
 * `/executorch`.
 */
export { pickBucket, checkedLengths } from './buckets.js';
export {
  INPUT_NAMES, ManifestError, TASKS, TASK_OUTPUTS, modelFileOf, readManifest, requireTarget, transformersJsOptions,
  type Bucket, type ExportInfo, type ExportManifest, type InputDtype, type InputName, type InputSpec, type OutputSpec, type Task,
} from './manifest.js';
export { EdgeModel, type ModelFiles } from './model.js';
export {
  inputTensors, requireOutput,
  type IdArray, type InputTensor, type OutputArray, type OutputTensor, type Runtime, type RuntimeFactory,
} from './runtime.js';
export { cosine, maskPredictions, numbers, rankLabels, softmax, type LabelScore, type MaskPrediction, type TokenScore } from './tasks.js';
export {
  EdgeTokenizer, lowercaseCodePoints, lowercaseOutside, normalizerLowercases,
  type EncodedText, type PaddingSide, type LibraryTokenizer, type LibraryTokenizerClass, type TokenizerOptions,
} from './tokenizer.js';
