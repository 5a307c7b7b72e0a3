/** Token ids from the JS tokenizer wrapper equal Python's (transformers, edgebert.parity.encode) on tricky strings. */
import assert from 'node:assert/strict';
import path from 'node:path';
import { describe, test } from 'node:test';

import { EdgeTokenizer, lowercaseCodePoints, normalizerLowercases } from '../src/core/tokenizer';
import { MODEL_DIR, readJson, readManifest } from '../src/node';
import { NO_MODEL, reference } from './helpers';

function load(seqLen?: number): EdgeTokenizer {
  const manifest = readManifest();
  return new EdgeTokenizer(
    readJson<object>(path.join(MODEL_DIR, 'tokenizer.json')),
    readJson<object>(path.join(MODEL_DIR, 'tokenizer_config.json')),
    { seqLen: seqLen ?? manifest.seq_len, doLowerCase: manifest.model.do_lower_case },
  );
}

describe('tokenizer', { skip: NO_MODEL }, () => {
  const tok = NO_MODEL ? (null as unknown as EdgeTokenizer) : load();

  for (const [i, c] of reference.tokens.entries()) {
    const label = c.text.length > 40 ? `${c.text.slice(0, 37)}… (${c.text.length} chars)` : JSON.stringify(c.text);
    test(`case ${i}: ${label}`, () => {
      assert.equal(tok.seqLen, c.input_ids.length, 'fixture and export disagree on seq_len: regenerate the fixture');
      const enc = tok.encode(c.text);
      assert.deepEqual(Array.from(enc.inputIds), c.input_ids, 'input_ids');
      assert.deepEqual(Array.from(enc.attentionMask), c.attention_mask, 'attention_mask');
      assert.deepEqual(Array.from(enc.tokenTypeIds), c.token_type_ids, 'token_type_ids');
    });
  }

  test('very long input keeps [CLS] … [SEP] and fills seq_len', () => {
    const enc = tok.encode('word '.repeat(1000));
    assert.equal(enc.truncated, true);
    assert.equal(enc.length, tok.seqLen);
    assert.equal(enc.inputIds[0], 101);
    assert.equal(enc.inputIds[tok.seqLen - 1], 102);
  });

  test('a shorter seq_len truncates the same way', () => {
    const short = load(16);
    const ids = short.ids('The quick brown fox jumps over the lazy dog and keeps running far away from here.');
    assert.equal(ids.length, 16);
    assert.equal(ids[0], 101);
    assert.equal(ids[15], 102);
    assert.deepEqual(ids.slice(0, 15), tok.ids('The quick brown fox jumps over the lazy dog and keeps running far away from here.').slice(0, 15));
  });
});

test('lowercasing goes code point by code point, like the Rust tokenizers (no Greek final sigma)', () => {
  assert.equal(lowercaseCodePoints('ΣΊΣΥΦΟΣ İstanbul ÀÉ'), 'σίσυφοσ i̇stanbul àé');
  assert.notEqual('ΣΊΣΥΦΟΣ'.toLowerCase(), lowercaseCodePoints('ΣΊΣΥΦΟΣ')); // why the wrapper exists
});

test('normalizerLowercases reads BertNormalizer, Lowercase and Sequence normalizers', () => {
  assert.equal(normalizerLowercases({ type: 'BertNormalizer', lowercase: true }), true);
  assert.equal(normalizerLowercases({ type: 'BertNormalizer', lowercase: false }), false);
  assert.equal(normalizerLowercases({ type: 'Sequence', normalizers: [{ type: 'NFD' }, { type: 'Lowercase' }] }), true);
  assert.equal(normalizerLowercases(null), false);
});
