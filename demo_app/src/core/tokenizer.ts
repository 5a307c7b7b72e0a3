/**
 * The app's tokeniser: edgebert's EdgeTokenizer (edgebert/targets/tfjs/js/shared/edge_tokenizer.mjs, shared with
 * the Node runner that `edgebert bench` times) over this app's copy of @huggingface/tokenizers. It equals Python's
 * `tokenizer(text, truncation=True, max_length=seq_len, padding="max_length")`, with max_length the smallest of the
 * export's sequence-length buckets that holds the text.
 */
import { Tokenizer } from '@huggingface/tokenizers';

import {
  EdgeTokenizer as SharedEdgeTokenizer,
  type TokenizerOptions,
} from '../../../edgebert/targets/tfjs/js/shared/edge_tokenizer.mjs';

export {
  lowercaseCodePoints,
  normalizerLowercases,
  pickBucket,
  type EncodedText,
  type TokenizerOptions,
} from '../../../edgebert/targets/tfjs/js/shared/edge_tokenizer.mjs';

export class EdgeTokenizer extends SharedEdgeTokenizer {
  constructor(tokenizerJson: object, tokenizerConfig: object, options: TokenizerOptions) {
    super(Tokenizer, tokenizerJson, tokenizerConfig, options);
  }
}
