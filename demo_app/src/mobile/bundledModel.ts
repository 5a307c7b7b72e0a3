/**
 * The export bundled with the app (scripts/prepare.sh writes it to assets/model/), loaded on the device with
 * tfjs-react-native's bundleResourceIO: model.json as a JSON module plus the single weights shard as an asset.
 * In development (Expo Go, `expo start`) the shard is fetched from Metro over HTTP; in a release build it is read
 * from the app bundle with react-native-fs (so release builds need a native build: `npx expo run:android|ios`).
 */
import { bundleResourceIO } from '@tensorflow/tfjs-react-native';

import type { ModelFiles } from '../core/model';
import type { ExportManifest, Note, NoteEmbeddings } from '../core/types';

// Static require()s: Metro bundles exactly these files. The shard name is fixed because the tfjs converter names a
// single-shard export group1-shard1of1.bin (scripts/precompute.ts refuses exports with another layout).
const manifest = require('../../assets/model/edgebert.json') as ExportManifest;
const modelJson = require('../../assets/model/model.json');
const weights = require('../../assets/model/group1-shard1of1.bin') as number;
const tokenizerJson = require('../../assets/model/tokenizer.json') as object;
const tokenizerConfig = require('../../assets/model/tokenizer_config.json') as object;

export const notes = require('../../assets/notes.json') as Note[];
export const noteEmbeddings = require('../../assets/note_embeddings.json') as NoteEmbeddings;

export function bundledModelFiles(): ModelFiles {
  return { manifest, tokenizerJson, tokenizerConfig, source: bundleResourceIO(modelJson, weights) };
}
