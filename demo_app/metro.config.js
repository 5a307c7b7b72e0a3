// Metro must treat the TF.js weights shard (*.bin), the ONNX model (*.onnx), the TFLite one (*.tflite) and the
// ExecuTorch program (*.pte) as assets so that require() gives
// bundleResourceIO / expo-asset an asset id; model.json, tokenizer.json and the notes are ordinary JSON modules.
const path = require('path');
const { getDefaultConfig } = require('expo/metro-config');

// edgebert-runtime (tokenizer, manifest, buckets, task calls, runtime adapters), linked from js/edgebert-runtime by
// package.json's file: dependency: Metro follows the link to the real folder, so it watches that folder (found
// through the link, wherever the app is). Of the package's own node_modules the bundle needs only its tokenizer
// library; the rest (runtimes installed for its tests and types) is not crawled.
const RUNTIME_PACKAGE = path.dirname(require.resolve('edgebert-runtime/package.json'));
const escape = (p) => p.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');

/** @type {import('expo/metro-config').MetroConfig} */
const config = getDefaultConfig(__dirname);
config.watchFolders = [...(config.watchFolders ?? []), RUNTIME_PACKAGE];
const MODEL_EXTS = ['bin', 'onnx', 'tflite', 'pte'];
config.resolver.assetExts = [...config.resolver.assetExts.filter((ext) => !MODEL_EXTS.includes(ext)), ...MODEL_EXTS];
// web/ and test/ are not part of the app bundle.
config.resolver.blockList = [
  /\/web\/dist\/.*/,
  /\/test\/.*/,
  new RegExp(`^${escape(RUNTIME_PACKAGE)}/node_modules/(?!@huggingface(/|$)).*`),
];

module.exports = config;
