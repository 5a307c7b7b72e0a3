/**
 * The export bundled with the app (scripts/prepare.sh writes it to assets/model/), loaded on the device with
 * tfjs-react-native's bundleResourceIO. Metro bundles only files named in static require()s, so prepare.sh also
 * writes src/mobile/bundledGraphs.ts (scripts/bundle-table.mjs): one require() per sequence-length bucket graph
 * (model-16.json, …, model.json) and one for the single weights shard. The shortest bucket's graph is loaded with
 * the shard, the others share its weights (src/core/bundle.ts), and each query runs on the smallest bucket that
 * holds it, as on the web page and in Node.
 * In development (Expo Go, `expo start`) the shard is fetched from Metro over HTTP; in a release build it is read
 * from the app bundle with react-native-fs (so release builds need a native build: `npx expo run:android|ios`).
 */
import { bundleResourceIO } from '@tensorflow/tfjs-react-native';

import { bundledFiles, type BundleTable } from '../core/bundle';
import type { ModelFiles } from '../core/model';
import type { ExportManifest, Note, NoteEmbeddings } from '../core/types';

// Static require()s: Metro bundles exactly these files. bundledGraphs.ts is generated with the export (not committed).
const manifest = require('../../assets/model/edgebert.json') as ExportManifest;
const { bundleTable } = require('./bundledGraphs') as { bundleTable: BundleTable };
const tokenizerJson = require('../../assets/model/tokenizer.json') as object;
const tokenizerConfig = require('../../assets/model/tokenizer_config.json') as object;

export const notes = require('../../assets/notes.json') as Note[];
export const noteEmbeddings = require('../../assets/note_embeddings.json') as NoteEmbeddings;

export function bundledModelFiles(): ModelFiles {
  return bundledFiles(manifest, tokenizerJson, tokenizerConfig, bundleTable, (modelJson, weights) =>
    bundleResourceIO(modelJson, weights as number),
  );
}
