/**
 * BERT-style tokenisation for an edgebert export, on top of @huggingface/tokenizers (pure JS, reads the export's
 * tokenizer.json). That library does the normalisation, pre-tokenisation, WordPiece and the [CLS]/[SEP] template, but
 * no truncation, padding or token type ids: this module adds them, so that the result equals Python's
 * `tokenizer(text, truncation=True, max_length=seq_len, padding="max_length")`, with max_length the smallest of the
 * export's buckets that holds the text (or no padding at all for a dynamic-shape export).
 *
 * The one copy for every JS caller: the runtime adapters here, edgebert's Node runner (which `edgebert bench` times)
 * and the demo app.
 */
import { Tokenizer } from '@huggingface/tokenizers';

import { checkedLengths, pickBucket } from './buckets.js';

export interface EncodedText {
  /** int32 [padded]: ids, padded with the pad id to the smallest bucket that holds them (own length when dynamic). */
  inputIds: Int32Array;
  /** int32 [padded]: 1 for real tokens (special tokens included), 0 for padding. */
  attentionMask: Int32Array;
  /** int32 [padded]: segment ids (0 for a single sentence), the pad type id for padding. */
  tokenTypeIds: Int32Array;
  /** Number of real tokens (≤ seqLen), special tokens included. */
  length: number;
  /** Index of the first real token: 0, or the padding before it when the tokenizer pads on the left (XLNet). */
  start: number;
  /** True when the text had more tokens than fit and was cut (the final [SEP] is kept). */
  truncated: boolean;
}

/** What EdgeTokenizer uses of @huggingface/tokenizers' Tokenizer. */
export interface LibraryTokenizer {
  encode(text: string, options: { add_special_tokens: boolean; return_token_type_ids?: boolean }): {
    ids: number[];
    token_type_ids?: number[] | null;
  };
  tokenize(text: string): string[];
  token_to_id(token: string): number | undefined;
  id_to_token?(id: number): string | undefined;
}

export type LibraryTokenizerClass = new (tokenizerJson: object, tokenizerConfig: object) => LibraryTokenizer;

export interface TokenizerOptions {
  /** The export's longest sequence length (manifest `seq_len`): texts are truncated to it. */
  seqLen: number;
  /** The lengths a text may be padded to (manifest `buckets[].seq_len`); default: the one length `seqLen`. */
  buckets?: readonly number[];
  /** Pad nothing: the arrays are as long as the text's tokens (ONNX, ExecuTorch: dynamic-shape exports). */
  dynamic?: boolean;
  /** The model's `do_lower_case` (manifest `model.do_lower_case`); applied here only if tokenizer.json does not. */
  doLowerCase?: boolean;
  /** The library's Tokenizer class (default: this package's @huggingface/tokenizers), for an app bundling its own. */
  tokenizerClass?: LibraryTokenizerClass;
  /** Which side padding goes (manifest `model.padding_side`, what Python's tokenizer does); default: tokenizer.json's
   * padding direction, else tokenizer_config.json's `padding_side`, else right. */
  paddingSide?: PaddingSide;
}

export type PaddingSide = 'left' | 'right';

interface Special {
  ids: number[];
  types: number[];
}

/** Whether a tokenizer.json normalizer (possibly a Sequence) already lowercases its input. */
export function normalizerLowercases(normalizer: unknown): boolean {
  if (!normalizer || typeof normalizer !== 'object') return false;
  const n = normalizer as { type?: string; lowercase?: boolean; normalizers?: unknown[] };
  if (n.type === 'Lowercase') return true;
  if (n.type === 'BertNormalizer') return n.lowercase !== false;
  if (n.type === 'Sequence' && Array.isArray(n.normalizers)) return n.normalizers.some(normalizerLowercases);
  return false;
}

/** Lowercase each code point on its own (Rust's char::to_lowercase), without context-dependent rules. */
export function lowercaseCodePoints(text: string): string {
  let out = '';
  for (const ch of text) out += ch.toLowerCase();
  return out;
}

/**
 * `lowercaseCodePoints` outside the given special tokens ([MASK], [SEP], …), which the Rust tokenizers match before
 * normalising (added tokens with `normalized: false`): "the [MASK] is" keeps its mask token.
 */
export function lowercaseOutside(text: string, specials: readonly string[]): string {
  if (!specials.length) return lowercaseCodePoints(text);
  const escaped = [...specials].sort((a, b) => b.length - a.length).map((s) => s.replace(/[.*+?^${}()|[\]\\]/g, '\\$&'));
  return text
    .split(new RegExp(`(${escaped.join('|')})`))
    .map((part, i) => (i % 2 === 1 ? part : lowercaseCodePoints(part)))
    .join('');
}

/** The special added tokens of a tokenizer.json that the library matches before normalising. */
function unnormalizedSpecials(tokenizerJson: object): string[] {
  const added = (tokenizerJson as { added_tokens?: { content: string; special?: boolean; normalized?: boolean }[] }).added_tokens;
  return (added ?? []).filter((t) => t.special && t.normalized === false).map((t) => t.content);
}

/** The padding side a tokenizer's files declare: tokenizer.json's padding direction, else tokenizer_config.json's. */
function declaredPaddingSide(tokenizerJson: object, tokenizerConfig: Record<string, unknown>): PaddingSide {
  const direction = (tokenizerJson as { padding?: { direction?: string } | null }).padding?.direction;
  const side = typeof direction === 'string' ? direction.toLowerCase() : tokenizerConfig.padding_side;
  if (side === undefined || side === null || side === 'right') return 'right';
  if (side === 'left') return 'left';
  throw new Error(`unknown padding side ${JSON.stringify(side)}; expected left or right`);
}

function padInfo(tokenizerJson: object, tokenizerConfig: Record<string, unknown>, tok: LibraryTokenizer): { id: number; typeId: number } {
  const padding = (tokenizerJson as { padding?: { pad_id?: number; pad_type_id?: number } | null }).padding ?? null;
  if (padding && typeof padding.pad_id === 'number') {
    return { id: padding.pad_id, typeId: typeof padding.pad_type_id === 'number' ? padding.pad_type_id : 0 };
  }
  const padToken = typeof tokenizerConfig.pad_token === 'string' ? tokenizerConfig.pad_token : '[PAD]';
  const id = tok.token_to_id(padToken);
  if (id === undefined) throw new Error(`the tokenizer has no pad token (${padToken}); cannot pad to a static length`);
  const typeId = typeof tokenizerConfig.pad_token_type_id === 'number' ? tokenizerConfig.pad_token_type_id : 0;
  return { id, typeId };
}

function indexOfRun(haystack: readonly number[], needle: readonly number[]): number {
  outer: for (let i = 0; i + needle.length <= haystack.length; i++) {
    for (let j = 0; j < needle.length; j++) if (haystack[i + j] !== needle[j]) continue outer;
    return i;
  }
  return -1;
}

/**
 * The special tokens the post-processor puts around a single sequence ([CLS] … [SEP] for BERT), found once by
 * encoding a probe with and without them, so that truncation keeps them exactly as Python does.
 */
function template(tok: LibraryTokenizer): { prefix: Special; suffix: Special } {
  const probe = 'a';
  const bare = tok.encode(probe, { add_special_tokens: false }).ids;
  const full = tok.encode(probe, { add_special_tokens: true, return_token_type_ids: true });
  const start = indexOfRun(full.ids, bare);
  if (start < 0) throw new Error('cannot locate the text inside the special-token template of this tokenizer');
  const end = start + bare.length;
  const types = full.token_type_ids ?? full.ids.map(() => 0);
  return {
    prefix: { ids: full.ids.slice(0, start), types: types.slice(0, start) },
    suffix: { ids: full.ids.slice(end), types: types.slice(end) },
  };
}

export class EdgeTokenizer {
  readonly seqLen: number;
  /** The lengths a text may be padded to, ascending (the last is seqLen); empty when dynamic. */
  readonly buckets: number[];
  readonly dynamic: boolean;
  readonly padId: number;
  readonly padTypeId: number;
  readonly paddingSide: PaddingSide;
  /** Whether this wrapper lowercases the text before the library does anything (see lowercaseOutside). */
  readonly lowercaseHere: boolean;
  private readonly tok: LibraryTokenizer;
  private readonly specials: string[];
  private readonly prefix: Special;
  private readonly suffix: Special;

  constructor(tokenizerJson: object, tokenizerConfig: object, options: TokenizerOptions) {
    if (!Number.isInteger(options.seqLen) || options.seqLen < 2) {
      throw new Error(`seqLen must be an integer ≥ 2, got ${options.seqLen}`);
    }
    this.seqLen = options.seqLen;
    this.dynamic = Boolean(options.dynamic);
    this.buckets = this.dynamic ? [] : checkedLengths(options.buckets?.length ? options.buckets : [this.seqLen], 'buckets');
    if (!this.dynamic && this.buckets[this.buckets.length - 1] !== this.seqLen) {
      throw new Error(`the largest bucket must be seqLen ${this.seqLen}, got [${this.buckets.join(', ')}]`);
    }
    const TokenizerClass = options.tokenizerClass ?? (Tokenizer as unknown as LibraryTokenizerClass);
    this.tok = new TokenizerClass(tokenizerJson, tokenizerConfig);
    const pad = padInfo(tokenizerJson, tokenizerConfig as Record<string, unknown>, this.tok);
    this.padId = pad.id;
    this.padTypeId = pad.typeId;
    this.paddingSide = options.paddingSide ?? declaredPaddingSide(tokenizerJson, tokenizerConfig as Record<string, unknown>);
    // Lowercased here, code point by code point as the Rust tokenizers do: String.prototype.toLowerCase() on the
    // whole string applies the Greek final-sigma rule (ΣΟΦΟΣ → σοφος), Python's tokenizer does not (σοφοσ).
    this.lowercaseHere = Boolean(options.doLowerCase) || normalizerLowercases((tokenizerJson as { normalizer?: unknown }).normalizer);
    this.specials = unnormalizedSpecials(tokenizerJson);
    ({ prefix: this.prefix, suffix: this.suffix } = template(this.tok));
    if (this.prefix.ids.length + this.suffix.ids.length >= this.seqLen) {
      throw new Error(`seqLen ${this.seqLen} leaves no room for text between the special tokens`);
    }
  }

  private prepared(text: string): string {
    return this.lowercaseHere ? lowercaseOutside(text, this.specials) : text;
  }

  /** Token ids of `text` with special tokens, truncated to seqLen (no padding): what Python's tokenizer returns. */
  ids(text: string): number[] {
    const enc = this.encode(text);
    return Array.from(enc.inputIds.subarray(enc.start, enc.start + enc.length));
  }

  /** Tokens (strings) of `text` without special tokens, untruncated: for display and debugging. */
  tokenize(text: string): string[] {
    return this.tok.tokenize(this.prepared(text));
  }

  /** The id of a token (e.g. the mask token), or undefined. */
  tokenToId(token: string): number | undefined {
    return this.tok.token_to_id(token);
  }

  /** The token string of an id (fill-mask predictions). */
  idToToken(id: number): string {
    const token = this.tok.id_to_token?.(id);
    if (token === undefined) throw new Error(`the tokenizer has no token with id ${id}`);
    return token;
  }

  /** int32 arrays padded to the smallest bucket that holds the text (unpadded when dynamic), on `paddingSide`. */
  encode(text: string): EncodedText {
    const content = this.tok.encode(this.prepared(text), { add_special_tokens: false, return_token_type_ids: true });
    const room = this.seqLen - this.prefix.ids.length - this.suffix.ids.length;
    const truncated = content.ids.length > room;
    const body = truncated ? content.ids.slice(0, room) : content.ids;
    const bodyTypes = (content.token_type_ids ?? content.ids.map(() => 0)).slice(0, body.length);
    const ids = [...this.prefix.ids, ...body, ...this.suffix.ids];
    const types = [...this.prefix.types, ...bodyTypes, ...this.suffix.types];

    const padded = this.dynamic ? ids.length : pickBucket(ids.length, this.buckets);
    const inputIds = new Int32Array(padded).fill(this.padId);
    const attentionMask = new Int32Array(padded);
    const tokenTypeIds = new Int32Array(padded).fill(this.padTypeId);
    const start = this.paddingSide === 'left' ? padded - ids.length : 0;
    inputIds.set(ids, start);
    attentionMask.fill(1, start, start + ids.length);
    tokenTypeIds.set(types, start);
    return { inputIds, attentionMask, tokenTypeIds, length: ids.length, start, truncated };
  }
}
