export { EdgeTokenizer, lowercaseCodePoints, normalizerLowercases, type EncodedText, type TokenizerOptions } from './tokenizer';
export { Classifier, LOGITS_OUTPUT, rankLabels, softmax, type LabelScore } from './classify';
export { Embedder, EMBEDDING_OUTPUT, runtimeOf, type ModelFiles, type ModelSource } from './model';
export { NoteIndex, cosine, embedNotes, noteText, topK, type SearchResult } from './search';
export type { ExportManifest, Note, NoteEmbeddings, SearchHit } from './types';
export { onnxWebRuntime, ONNX_MODEL_FILE, ONNX_RUNTIME_NAME, type OrtWebModule } from './onnx';
