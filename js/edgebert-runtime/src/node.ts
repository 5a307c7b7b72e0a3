/// <reference types="node" />
/**
 * Node helpers (`edgebert-runtime/node`): read an export directory from disk. Not for React Native or browsers,
 * which bundle or fetch the files instead.
 */
import fs from 'node:fs';
import path from 'node:path';

import { graphArtifacts, type GraphIOHandler, type GraphModelJson } from './adapters/tfjs-graphs.js';
import { modelFileOf, type ExportManifest } from './manifest.js';

export interface ExportFiles {
  dir: string;
  /** The model file's path (`dir` joined with the manifest's `modelFileOf`): ONNX Runtime's session opens it. */
  modelPath: string;
  manifest: unknown;
  tokenizerJson: object;
  tokenizerConfig: object;
}

const EXPORT_FILES = ['edgebert.json', 'tokenizer.json', 'tokenizer_config.json'];

function readJson<T>(file: string): T {
  return JSON.parse(fs.readFileSync(file, 'utf8')) as T;
}

/** The manifest and tokenizer files of an export directory; a missing one is named in the error. */
export function readExportFiles(dir: string): ExportFiles {
  const missing = EXPORT_FILES.filter((f) => !fs.existsSync(path.join(dir, f)));
  if (missing.length) throw new Error(`${dir} is not an edgebert export: ${missing.join(', ')} missing`);
  const manifest = readJson<ExportManifest>(path.join(dir, 'edgebert.json'));
  return {
    dir,
    modelPath: path.join(dir, modelFileOf(manifest)),
    manifest,
    tokenizerJson: readJson<object>(path.join(dir, 'tokenizer.json')),
    tokenizerConfig: readJson<object>(path.join(dir, 'tokenizer_config.json')),
  };
}

/** A tf.io.IOHandler that reads a TF.js graph's json and concatenates its weight shards from disk. */
export function fileGraphSource(dir: string, modelFile = 'model.json'): GraphIOHandler {
  return {
    load: async () => {
      const modelJson = readJson<GraphModelJson>(path.join(dir, modelFile));
      const all = Buffer.concat(modelJson.weightsManifest.flatMap((g) => g.paths).map((p) => fs.readFileSync(path.join(dir, p))));
      return { ...graphArtifacts(modelJson), weightData: all.buffer.slice(all.byteOffset, all.byteOffset + all.byteLength) };
    },
  };
}
