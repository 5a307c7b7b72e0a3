/**
 * The app's tokeniser: edgebert-runtime's EdgeTokenizer (js/edgebert-runtime, the package every JS caller of an
 * edgebert export uses, edgebert's Node runner included, so `edgebert bench` times the app's own tokenizer). It
 * equals Python's `tokenizer(text, truncation=True, max_length=seq_len, padding="max_length")`, with max_length the
 * smallest of the export's sequence-length buckets that holds the text.
 */
export {
  EdgeTokenizer,
  lowercaseCodePoints,
  normalizerLowercases,
  pickBucket,
  type EncodedText,
  type TokenizerOptions,
} from 'edgebert-runtime';
