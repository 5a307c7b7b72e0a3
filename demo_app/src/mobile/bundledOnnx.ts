/**
 * The ONNX export bundled with the app (scripts/prepare.sh writes it to assets/model-onnx/: the same student as
 * assets/model, `--target onnx --quantize int8`), run by onnxruntime-react-native through edgebert-runtime's
 * onnxruntime adapter: each query at its own length, no padding. Metro bundles model.onnx as an asset
 * (metro.config.js: 'onnx' in assetExts); expo-asset gives the session a local file of it.
 * onnxruntime-react-native is a native module: a development build (`npx expo run:android|ios`) includes it, Expo Go
 * does not, and loading then fails with its own message while the TF.js runtime keeps working.
 */
import { Asset } from 'expo-asset';
import { onnxruntime, type OrtSessionLike, type OrtTensorClass } from 'edgebert-runtime/onnxruntime';

import type { ModelFiles } from '../core/model';
import type { ExportManifest } from '../core/types';

export const ONNX_RN_RUNTIME_NAME = 'onnxruntime-react-native';

// Static require()s: Metro bundles exactly these files (prepare.sh writes them; not committed).
const manifest = require('../../assets/model-onnx/edgebert.json') as ExportManifest;
const tokenizerJson = require('../../assets/model-onnx/tokenizer.json') as object;
const tokenizerConfig = require('../../assets/model-onnx/tokenizer_config.json') as object;
const modelAsset = require('../../assets/model-onnx/model.onnx') as number;

/** The bundled ONNX export with an onnxruntime-react-native session on it (one thread, like the other runtimes). */
export async function bundledOnnxFiles(): Promise<ModelFiles> {
  const ort = await import('onnxruntime-react-native'); // the native module is resolved only when chosen
  const [asset] = await Asset.loadAsync(modelAsset);
  const path = asset.localUri ?? asset.uri;
  const session = await ort.InferenceSession.create(path, { intraOpNumThreads: 1 });
  const runtime = onnxruntime({ session: session as unknown as OrtSessionLike, Tensor: ort.Tensor as unknown as OrtTensorClass, name: ONNX_RN_RUNTIME_NAME });
  return { manifest, tokenizerJson, tokenizerConfig, runtime };
}
