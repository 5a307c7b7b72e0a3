// The command line and texts of the benchmarks that compare an export's bucket graphs with a free-axis graph
// (tfjs_free_axis.mjs, tfjs_webgl_shapes.mjs): `BUCKETS_EXPORT_DIR FREE_AXIS_DIR --texts FILE [--limit N]`, the
// file's distinct non-empty lines evenly spaced (as `edgebert bench` samples them), each tokenized by the app's
// tokenizer for the bucketed export (its ids padded to their bucket; `length` real tokens).
import fs from 'node:fs';
import { createRequire } from 'node:module';

import { exportGraphs, exportTokenizer } from '../edgebert/targets/tfjs/js/load_export.mjs';

const runnerRequire = createRequire(new URL('../edgebert/targets/tfjs/js/package.json', import.meta.url));

export function bucketsAndFreeAxis(script, defaultLimit) {
  const [bucketsDir, freeDir, ...rest] = process.argv.slice(2);
  const flag = (name, fallback) => (rest.includes(name) ? rest[rest.indexOf(name) + 1] : fallback);
  if (!bucketsDir || !freeDir || !flag('--texts')) {
    console.error(`usage: node benchmarks/${script} BUCKETS_EXPORT_DIR FREE_AXIS_DIR --texts FILE [--limit ${defaultLimit}]`);
    process.exit(2);
  }
  const limit = Number(flag('--limit', defaultLimit));
  const lines = [...new Set(fs.readFileSync(flag('--texts'), 'utf8').split('\n').map((t) => t.trim()).filter(Boolean))];
  const n = Math.min(limit, lines.length);
  const texts = Array.from({ length: n }, (_, i) => lines[Math.floor((i * lines.length) / n)]); // edgebert.data.evenly_spaced
  const { Tokenizer } = runnerRequire('@huggingface/tokenizers');
  const tokenizer = exportTokenizer(Tokenizer, bucketsDir);
  return { bucketsDir, freeDir, texts, graphs: exportGraphs(bucketsDir).graphs, encoded: texts.map((t) => tokenizer.encode(t)) };
}
