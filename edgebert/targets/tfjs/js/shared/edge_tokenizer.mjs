// BERT-style tokenisation for a fixed-shape edgebert TF.js export, on top of @huggingface/tokenizers (pure JS, reads
// the export's tokenizer.json). That library does the normalisation, pre-tokenisation, WordPiece and the [CLS]/[SEP]
// template, but no truncation, padding or token type ids: this module adds them so that the result equals Python's
// `tokenizer(text, truncation=True, max_length=seq_len, padding="max_length")`, with max_length the smallest of the
// export's sequence-length buckets that holds the text (edgebert/buckets.py picks the same way).
//
// One copy for every JS caller: the Node runner (run_tfjs.mjs, which bench times it with) and the demo app
// (demo_app/src/core/tokenizer.ts; Metro, esbuild and tsx bundle it from here). No imports: the caller passes the
// library's Tokenizer class, so that each app bundles its own copy of it. Types: edge_tokenizer.d.mts.

// Whether a tokenizer.json normalizer (possibly a Sequence) already lowercases its input.
export function normalizerLowercases(normalizer) {
  if (!normalizer || typeof normalizer !== 'object') return false;
  if (normalizer.type === 'Lowercase') return true;
  if (normalizer.type === 'BertNormalizer') return normalizer.lowercase !== false;
  if (normalizer.type === 'Sequence' && Array.isArray(normalizer.normalizers)) {
    return normalizer.normalizers.some(normalizerLowercases);
  }
  return false;
}

function padInfo(tokenizerJson, tokenizerConfig, tok) {
  const padding = tokenizerJson.padding ?? null;
  if (padding && typeof padding.pad_id === 'number') {
    return { id: padding.pad_id, typeId: typeof padding.pad_type_id === 'number' ? padding.pad_type_id : 0 };
  }
  const padToken = typeof tokenizerConfig.pad_token === 'string' ? tokenizerConfig.pad_token : '[PAD]';
  const id = tok.token_to_id(padToken);
  if (id === undefined) throw new Error(`the tokenizer has no pad token (${padToken}); cannot pad to a static length`);
  const typeId = typeof tokenizerConfig.pad_token_type_id === 'number' ? tokenizerConfig.pad_token_type_id : 0;
  return { id, typeId };
}

// The smallest bucket that holds `length` tokens (the largest when none does: the text was truncated to it).
export function pickBucket(length, buckets) {
  const sorted = [...buckets].sort((a, b) => a - b);
  return sorted.find((b) => b >= length) ?? sorted[sorted.length - 1];
}

// Lowercase each code point on its own (Rust's char::to_lowercase), without context-dependent rules.
export function lowercaseCodePoints(text) {
  let out = '';
  for (const ch of text) out += ch.toLowerCase();
  return out;
}

function indexOfRun(haystack, needle) {
  outer: for (let i = 0; i + needle.length <= haystack.length; i++) {
    for (let j = 0; j < needle.length; j++) if (haystack[i + j] !== needle[j]) continue outer;
    return i;
  }
  return -1;
}

export class EdgeTokenizer {
  // TokenizerClass: @huggingface/tokenizers' Tokenizer; options: {seqLen, buckets?, doLowerCase?} (see the .d.mts).
  constructor(TokenizerClass, tokenizerJson, tokenizerConfig, options) {
    if (!Number.isInteger(options.seqLen) || options.seqLen < 2) {
      throw new Error(`seqLen must be an integer ≥ 2, got ${options.seqLen}`);
    }
    this.seqLen = options.seqLen;
    this.buckets = [...new Set(options.buckets?.length ? options.buckets : [options.seqLen])].sort((a, b) => a - b);
    if (this.buckets[this.buckets.length - 1] !== this.seqLen || this.buckets.some((b) => !Number.isInteger(b) || b < 2)) {
      throw new Error(`buckets must be integers ≥ 2 whose largest is seqLen ${this.seqLen}, got ${this.buckets}`);
    }
    this.tok = new TokenizerClass(tokenizerJson, tokenizerConfig);
    const pad = padInfo(tokenizerJson, tokenizerConfig, this.tok);
    this.padId = pad.id;
    this.padTypeId = pad.typeId;
    // Lowercased here, code point by code point as the Rust tokenizers do, when tokenizer.json's normalizer
    // lowercases or the model wants it: String.prototype.toLowerCase() on the whole string applies the Greek
    // final-sigma rule (ΣΟΦΟΣ → σοφος), Python's tokenizer does not (σοφοσ), and the ids would differ.
    this.lowercaseHere = Boolean(options.doLowerCase) || normalizerLowercases(tokenizerJson.normalizer);

    // The special tokens the post-processor puts around a single sequence ([CLS] … [SEP] for BERT), found once by
    // encoding a probe with and without them, so that truncation keeps them exactly as Python does.
    const probe = 'a';
    const bare = this.tok.encode(probe, { add_special_tokens: false }).ids;
    const full = this.tok.encode(probe, { add_special_tokens: true, return_token_type_ids: true });
    const start = indexOfRun(full.ids, bare);
    if (start < 0) throw new Error('cannot locate the text inside the special-token template of this tokenizer');
    const end = start + bare.length;
    const types = full.token_type_ids ?? full.ids.map(() => 0);
    this.prefix = { ids: full.ids.slice(0, start), types: types.slice(0, start) };
    this.suffix = { ids: full.ids.slice(end), types: types.slice(end) };
    if (this.prefix.ids.length + this.suffix.ids.length >= this.seqLen) {
      throw new Error(`seqLen ${this.seqLen} leaves no room for text between the special tokens`);
    }
  }

  // Token ids of `text` with special tokens, truncated to seqLen (no padding): what Python's tokenizer returns.
  ids(text) {
    const enc = this.encode(text);
    return Array.from(enc.inputIds.subarray(0, enc.length));
  }

  // Tokens (strings) of `text` without special tokens, untruncated: for display and debugging.
  tokenize(text) {
    return this.tok.tokenize(this.lowercaseHere ? lowercaseCodePoints(text) : text);
  }

  // int32 arrays padded to the smallest bucket that holds the text, its token count, and whether it was cut.
  encode(text) {
    const input = this.lowercaseHere ? lowercaseCodePoints(text) : text;
    const content = this.tok.encode(input, { add_special_tokens: false, return_token_type_ids: true });
    const room = this.seqLen - this.prefix.ids.length - this.suffix.ids.length;
    const truncated = content.ids.length > room;
    const body = truncated ? content.ids.slice(0, room) : content.ids;
    const bodyTypes = (content.token_type_ids ?? content.ids.map(() => 0)).slice(0, body.length);
    const ids = [...this.prefix.ids, ...body, ...this.suffix.ids];
    const types = [...this.prefix.types, ...bodyTypes, ...this.suffix.types];

    const padded = pickBucket(ids.length, this.buckets);
    const inputIds = new Int32Array(padded).fill(this.padId);
    const attentionMask = new Int32Array(padded);
    const tokenTypeIds = new Int32Array(padded).fill(this.padTypeId);
    inputIds.set(ids);
    attentionMask.fill(1, 0, ids.length);
    tokenTypeIds.set(types);
    return { inputIds, attentionMask, tokenTypeIds, length: ids.length, truncated };
  }
}
