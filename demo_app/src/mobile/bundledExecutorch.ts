/**
 * The ExecuTorch export bundled with the app (scripts/prepare.sh writes it to assets/model-et/: the same student as
 * assets/model, `--target executorch --quantize int8`, XNNPACK, each query at its own length), run by
 * react-native-executorch through edgebert-runtime's executorch adapter. Metro bundles model.pte as an asset
 * (metro.config.js: 'pte' in assetExts); expo-asset gives `loadModel` a local file of it.
 * react-native-executorch is a native module (JSI): a development build (`npx expo run:android|ios`) includes it,
 * with the XNNPACK libraries its postinstall downloads (package.json's "react-native-executorch" block asks for that
 * backend only); Expo Go does not, and loading then fails with its own message while the TF.js runtime keeps working.
 */
import { Asset } from 'expo-asset';
import { executorch, type EtModelLike, type EtTensorFactory, type EtTensorLike } from 'edgebert-runtime/executorch';

import type { ModelFiles } from '../core/model';
import type { ExportManifest } from '../core/types';

export const EXECUTORCH_RN_RUNTIME_NAME = 'react-native-executorch';

// Static require()s: Metro bundles exactly these files (prepare.sh writes them; not committed).
const manifest = require('../../assets/model-et/edgebert.json') as ExportManifest;
const tokenizerJson = require('../../assets/model-et/tokenizer.json') as object;
const tokenizerConfig = require('../../assets/model-et/tokenizer_config.json') as object;
const modelAsset = require('../../assets/model-et/model.pte') as number;

/** A file:// URI as the plain path `loadModel` opens. */
export function localPath(uri: string): string {
  return uri.startsWith('file://') ? decodeURIComponent(uri.slice('file://'.length)) : uri;
}

/** The bundled ExecuTorch export loaded into react-native-executorch's runtime (XNNPACK, as the export was checked). */
export async function bundledExecutorchFiles(): Promise<ModelFiles> {
  const et = await import('react-native-executorch'); // the native module is resolved only when chosen
  const [asset] = await Asset.loadAsync(modelAsset);
  const model = et.loadModel(localPath(asset.localUri ?? asset.uri));
  const runtime = executorch({
    model: model as unknown as EtModelLike<EtTensorLike>,
    tensor: et.tensor as unknown as EtTensorFactory<EtTensorLike>,
  });
  return { manifest, tokenizerJson, tokenizerConfig, runtime };
}
