// Types of edge_tokenizer.mjs (the demo app's TypeScript imports it).

export interface EncodedText {
  /** int32 [bucket]: ids, padded with the pad id to the smallest bucket that holds them (seqLen without buckets). */
  inputIds: Int32Array;
  /** int32 [bucket]: 1 for real tokens (special tokens included), 0 for padding. */
  attentionMask: Int32Array;
  /** int32 [bucket]: segment ids (0 for a single sentence), pad type id for padding. */
  tokenTypeIds: Int32Array;
  /** Number of real tokens (≤ seqLen), special tokens included. */
  length: number;
  /** True when the text had more tokens than fit and was cut (the final [SEP] is kept). */
  truncated: boolean;
}

export interface TokenizerOptions {
  /** The export's longest sequence length (manifest `seq_len`): texts are truncated to it. */
  seqLen: number;
  /**
   * The export's sequence-length buckets (manifest `buckets[].seq_len`): a text is padded only to the smallest
   * bucket that holds it. Default: the one length `seqLen`.
   */
  buckets?: number[];
  /** The model's `do_lower_case` (manifest `model.do_lower_case`); applied here only if tokenizer.json does not. */
  doLowerCase?: boolean;
}

/** What EdgeTokenizer uses of @huggingface/tokenizers' Tokenizer. */
export interface LibraryTokenizer {
  encode(text: string, options: { add_special_tokens: boolean; return_token_type_ids?: boolean }): {
    ids: number[];
    token_type_ids?: number[] | null;
  };
  tokenize(text: string): string[];
  token_to_id(token: string): number | undefined;
}

export type LibraryTokenizerClass = new (tokenizerJson: object, tokenizerConfig: object) => LibraryTokenizer;

export function normalizerLowercases(normalizer: unknown): boolean;
export function pickBucket(length: number, buckets: readonly number[]): number;
export function lowercaseCodePoints(text: string): string;

export class EdgeTokenizer {
  readonly seqLen: number;
  /** The lengths a text may be padded to, ascending (the last is seqLen). */
  readonly buckets: number[];
  readonly padId: number;
  readonly padTypeId: number;
  /** Whether this wrapper lowercases the text before the library does anything (see the .mjs). */
  readonly lowercaseHere: boolean;
  constructor(
    TokenizerClass: LibraryTokenizerClass,
    tokenizerJson: object,
    tokenizerConfig: object,
    options: TokenizerOptions,
  );
  ids(text: string): number[];
  tokenize(text: string): string[];
  encode(text: string): EncodedText;
}
