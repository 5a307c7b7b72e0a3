// Metro must treat the TF.js weights shard (*.bin) as an asset so that require('…/group1-shard1of1.bin') gives
// bundleResourceIO an asset id; model.json, tokenizer.json and the notes are ordinary JSON modules.
const path = require('path');
const { getDefaultConfig } = require('expo/metro-config');

// The tokeniser the app shares with edgebert's Node runner (src/core/tokenizer.ts imports it from there).
const SHARED_JS = path.resolve(__dirname, '../edgebert/targets/tfjs/js/shared');

/** @type {import('expo/metro-config').MetroConfig} */
const config = getDefaultConfig(__dirname);
config.watchFolders = [...(config.watchFolders ?? []), SHARED_JS];
config.resolver.assetExts = [...config.resolver.assetExts.filter((ext) => ext !== 'bin'), 'bin'];
// web/ and test/ are not part of the app bundle.
config.resolver.blockList = [/\/web\/dist\/.*/, /\/test\/.*/];

module.exports = config;
