// Loading an edgebert TF.js export's graphs from disk in Node: shared by run_tfjs.mjs (the runner) and the
// .mjs scripts of benchmarks/suites/ and benchmarks/experiments/, so each times the graphs exactly as the runner
// loads them.
import fs from 'node:fs';
import path from 'node:path';

import { EdgeTokenizer } from '#edgebert-runtime';
import { fileGraphSource as fileHandler } from '#edgebert-runtime/node';
import { ownWeights } from '#edgebert-runtime/tfjs';

// The tokenizer, the file IOHandler and the weight map per graph come from edgebert-runtime (js/edgebert-runtime),
// the package apps run exports with: bench times the apps' own code.
export { fileHandler };

export function outputNodes(modelDir, modelFile, keys) {
  // Signature keys -> graph node names ("sentence_embedding" -> "Identity_1:0"), as the converter wrote them.
  const sig = JSON.parse(fs.readFileSync(path.join(modelDir, modelFile), 'utf8')).signature || {};
  const outputs = sig.outputs || {};
  return keys.map((k) => (outputs[k] && outputs[k].name) || k);
}

const weightMaps = new Map(); // model_dir + shard list -> decoded weights, shared by that export's bucket graphs

// A graph model over weights decoded once per shard set (GraphModel.loadWithWeightMap, tfjs-converter 4.x: tfjs has
// no public way to share weights between graph models); without that method each graph loads its own copy.
// `wholeShard`: give the graph the map of every weight in the shard instead (how edgebert loaded graphs before
// `ownWeights`; benchmarks/suites/tfjs_call_compare.mjs measures the difference).
export async function loadGraph(tf, modelDir, modelFile, { wholeShard = false } = {}) {
  const artifacts = await fileHandler(modelDir, modelFile).load();
  const model = new tf.GraphModel(fileHandler(modelDir, modelFile));
  if (typeof model.loadWithWeightMap !== 'function') return tf.loadGraphModel(fileHandler(modelDir, modelFile));
  const shards = JSON.stringify([modelDir, artifacts.weightSpecs.map((w) => w.name)]);
  if (!weightMaps.has(shards)) weightMaps.set(shards, tf.io.decodeWeights(artifacts.weightData, artifacts.weightSpecs));
  const shared = weightMaps.get(shards);
  model.loadWithWeightMap(artifacts, wholeShard ? shared : ownWeights(artifacts.modelTopology, shared));
  return model;
}

// The export's graphs, {seq_len, model_file} each, shortest first (older manifests: their one fixed graph).
export function exportGraphs(modelDir) {
  const manifest = JSON.parse(fs.readFileSync(path.join(modelDir, 'edgebert.json'), 'utf8'));
  return { manifest, graphs: manifest.buckets ?? [{ seq_len: manifest.seq_len, model_file: 'model.json' }] };
}

// The export's tokenizer as an app builds it from the manifest (edgebert-runtime's EdgeTokenizer): padding each text to the
// smallest bucket that holds it, or with `buckets: false` to the longest length (a one-shape app).
// `TokenizerClass`: @huggingface/tokenizers' Tokenizer.
export function exportTokenizer(TokenizerClass, modelDir, { buckets = true } = {}) {
  const { manifest, graphs } = exportGraphs(modelDir);
  const read = (name) => JSON.parse(fs.readFileSync(path.join(modelDir, name), 'utf8'));
  const options = { seqLen: manifest.seq_len, buckets: buckets ? graphs.map((g) => g.seq_len) : [],
    doLowerCase: manifest.model?.do_lower_case ?? undefined, paddingSide: manifest.model?.padding_side,
    tokenizerClass: TokenizerClass };
  return new EdgeTokenizer(read('tokenizer.json'), read('tokenizer_config.json'), options);
}
