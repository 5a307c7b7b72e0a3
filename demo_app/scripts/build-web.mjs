// Bundle the web page (web/main.ts + the shared core + TF.js wasm backend + onnxruntime-web + LiteRT.js) into web/dist/
// with esbuild.
//   node scripts/build-web.mjs        (run by scripts/prepare.sh; serve with `npm run web`)
import fs from 'node:fs';
import path from 'node:path';
import { createRequire } from 'node:module';
import { fileURLToPath } from 'node:url';

import * as esbuild from 'esbuild';

// LiteRT.js's relaxed-SIMD build, its plain-SIMD fallback and its threaded build (loadLiteRt picks one; the page
// asks for threads when it is cross-origin isolated); the JSPI build, which it loads only when asked, is left out.
const LITERT_WASM_FILES = ['internal', 'compat_internal', 'threaded_internal'].flatMap((b) => [`litert_wasm_${b}.js`, `litert_wasm_${b}.wasm`]);
const appDir = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const outDir = path.join(appDir, 'web', 'dist');
const require = createRequire(import.meta.url);

fs.rmSync(outDir, { recursive: true, force: true });
fs.mkdirSync(outDir, { recursive: true });
const result = await esbuild.build({
  entryPoints: [path.join(appDir, 'web', 'main.ts')],
  outfile: path.join(outDir, 'main.js'),
  bundle: true,
  format: 'esm',
  platform: 'browser',
  target: ['es2020'],
  minify: true,
  sourcemap: true,
  metafile: true,
  logLevel: 'warning',
});
fs.copyFileSync(path.join(appDir, 'web', 'index.html'), path.join(outDir, 'index.html'));
const wasmDir = path.dirname(require.resolve('@tensorflow/tfjs-backend-wasm/dist/tfjs-backend-wasm.wasm'));
for (const f of fs.readdirSync(wasmDir).filter((f) => f.endsWith('.wasm'))) {
  fs.copyFileSync(path.join(wasmDir, f), path.join(outDir, f));
}
// onnxruntime-web's wasm binary and its loader (?runtime=onnx), which it fetches from the page's directory.
const ortDir = path.dirname(require.resolve('onnxruntime-web/ort-wasm-simd-threaded.wasm'));
for (const f of ['ort-wasm-simd-threaded.wasm', 'ort-wasm-simd-threaded.mjs']) fs.copyFileSync(path.join(ortDir, f), path.join(outDir, f));
// LiteRT.js's wasm builds and their loaders (?runtime=litertjs), which loadLiteRt() picks from the page's directory.
const litertDir = path.join(path.dirname(require.resolve('@litertjs/core/package.json')), 'wasm');
for (const f of LITERT_WASM_FILES) fs.copyFileSync(path.join(litertDir, f), path.join(outDir, f));
const bytes = Object.values(result.metafile.outputs).reduce((s, o) => s + o.bytes, 0);
console.error(`build-web: ${path.relative(appDir, outDir)}/ (main.js + sourcemap ${(bytes / 1e6).toFixed(1)} MB, wasm files)`);
