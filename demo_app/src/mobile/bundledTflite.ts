/**
 * The TFLite export bundled with the app (scripts/prepare.sh writes it to assets/model-tflite/: the same student as
 * assets/model, `--target tflite --quantize int8`, one sequence length: react-native-fast-tflite runs a file's first
 * subgraph only), run by react-native-fast-tflite through edgebert-runtime's fast-tflite adapter: each query padded
 * to that length. Metro bundles model.tflite as an asset (metro.config.js: 'tflite' in assetExts).
 * react-native-fast-tflite is a native module (Nitro): a development build (`npx expo run:android|ios`) includes it,
 * Expo Go does not, and loading then fails with its own message while the TF.js runtime keeps working.
 */
import { fastTflite, type TfliteModelLike } from 'edgebert-runtime/fast-tflite';

import type { ModelFiles } from '../core/model';
import type { ExportManifest } from '../core/types';

export const TFLITE_RN_RUNTIME_NAME = 'react-native-fast-tflite';

// Static require()s: Metro bundles exactly these files (prepare.sh writes them; not committed).
const manifest = require('../../assets/model-tflite/edgebert.json') as ExportManifest;
const tokenizerJson = require('../../assets/model-tflite/tokenizer.json') as object;
const tokenizerConfig = require('../../assets/model-tflite/tokenizer_config.json') as object;
const modelAsset = require('../../assets/model-tflite/model.tflite') as number;

/** The bundled TFLite export on react-native-fast-tflite's default CPU path (XNNPACK), as the export was checked. */
export async function bundledTfliteFiles(): Promise<ModelFiles> {
  const { loadTensorflowModel } = await import('react-native-fast-tflite'); // the native module, resolved only when chosen
  const model = await loadTensorflowModel(modelAsset, []);
  const runtime = fastTflite(model as unknown as TfliteModelLike);
  return { manifest, tokenizerJson, tokenizerConfig, runtime };
}
