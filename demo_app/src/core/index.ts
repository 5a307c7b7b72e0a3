export { EdgeTokenizer, lowercaseCodePoints, normalizerLowercases, type EncodedText, type TokenizerOptions } from './tokenizer';
export { Embedder, EMBEDDING_OUTPUT, type ModelFiles, type ModelSource } from './model';
export { NoteIndex, cosine, noteText, topK, type SearchResult } from './search';
export type { ExportManifest, Note, NoteEmbeddings, SearchHit } from './types';
