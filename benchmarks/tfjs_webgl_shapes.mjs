// Per-bucket static graphs against one free-sequence-axis graph (benchmarks/tfjs_free_axis.py) on TF.js' WebGL
// backend, the backend tfjs-react-native's rn-webgl builds on, in headless Chromium. Without a GPU here Chromium runs
// WebGL on SwiftShader (the CPU), so the times are not a phone's; what carries over to a phone is what tfjs' WebGL
// backend does per input shape: it compiles a shader program per op *and shape* (unless WEBGL_USE_SHAPES_UNIFORMS),
// and a first call at a new shape pays those compiles. This counts the programs compiled (tf.backend().binaryCache)
// and times first calls at a new shape against repeat calls, for each graph kind, each in a fresh page.
//   node benchmarks/tfjs_webgl_shapes.mjs BUCKETS_EXPORT_DIR FREE_AXIS_DIR --texts FILE [--limit 100]
// Needs demo_app's npm packages (playwright-core) and Chromium (demo_app/scripts/install.sh).
import fs from 'node:fs';
import path from 'node:path';
import { createRequire } from 'node:module';

import { bucketsAndFreeAxis } from './tfjs_texts.mjs';

const runnerRequire = createRequire(new URL('../edgebert/targets/tfjs/js/package.json', import.meta.url));
const TF_JS = runnerRequire.resolve('@tensorflow/tfjs/dist/tf.min.js');
const { chromium } = createRequire(new URL('../demo_app/package.json', import.meta.url))('playwright-core');

const { bucketsDir, freeDir, texts, graphs, encoded } = bucketsAndFreeAxis('tfjs_webgl_shapes.mjs', 100);
const outputName = (dir, file) => JSON.parse(fs.readFileSync(path.join(dir, file), 'utf8')).signature.outputs.sentence_embedding.name;
const calls = {
  buckets: encoded.map((e) => ({ graph: `/b/${graphs.find((g) => g.seq_len === e.inputIds.length).model_file}`, ids: [...e.inputIds], used: e.length })),
  'free axis': encoded.map((e) => ({ graph: '/f/model.json', ids: [...e.inputIds.slice(0, e.length)], used: e.length })),
};
const graphFiles = { buckets: graphs.map((g) => `/b/${g.model_file}`), 'free axis': ['/f/model.json'] };
const outputs = Object.fromEntries([...graphs.map((g) => [`/b/${g.model_file}`, outputName(bucketsDir, g.model_file)]), ['/f/model.json', outputName(freeDir, 'model.json')]]);

// In the page: load the graphs, then embed each text in order; per call its wall time and the programs compiled so far.
async function pageRun({ graphFiles, calls, outputs, shapesUniforms }) {
  const tf = window.tf;
  tf.env().set('WEBGL_USE_SHAPES_UNIFORMS', shapesUniforms);
  await tf.setBackend('webgl');
  await tf.ready();
  const models = {};
  for (const file of graphFiles) models[file] = await tf.loadGraphModel(file);
  const programs = () => Object.keys(tf.backend().binaryCache).length;
  const afterLoad = programs();
  const rows = [];
  for (const c of calls) {
    const T = c.ids.length;
    const start = performance.now();
    const feeds = { input_ids: tf.tensor2d(c.ids, [1, T], 'int32'), attention_mask: tf.tensor2d(new Int32Array(T).fill(1, 0, c.used), [1, T], 'int32'),
      token_type_ids: tf.tensor2d(new Int32Array(T), [1, T], 'int32') };
    const out = models[c.graph].execute(feeds, outputs[c.graph]);
    await out.data();
    tf.dispose([out, ...Object.values(feeds)]);
    rows.push({ T, ms: performance.now() - start, programs: programs() });
  }
  const gl = document.createElement('canvas').getContext('webgl2');
  const info = gl && gl.getExtension('WEBGL_debug_renderer_info');
  return { backend: tf.getBackend(), renderer: info ? gl.getParameter(info.UNMASKED_RENDERER_WEBGL) : null, afterLoad, rows };
}

const browser = await chromium.launch({
  executablePath: process.env.CHROMIUM ?? '/usr/bin/chromium',
  args: ['--headless', '--no-sandbox', '--use-gl=angle', '--use-angle=swiftshader', '--enable-unsafe-swiftshader'],
});
const median = (x) => [...x].sort((a, b) => a - b)[x.length >> 1];
console.log(`chromium ${browser.version()}, tfjs WebGL backend; ${texts.length} texts in file order, ${new Set(encoded.map((e) => e.length)).size} distinct token counts`);
console.log('| graphs | WEBGL_USE_SHAPES_UNIFORMS | programs compiled | calls at a new shape: median ms | other calls: median ms | texts |');
console.log('|---|---|---|---|---|---|');
try {
  for (const shapesUniforms of [false, true]) {
    for (const kind of ['buckets', 'free axis']) {
      const page = await browser.newPage();
      await page.route('**/*', async (route) => {
        const url = new URL(route.request().url());
        if (url.pathname === '/') return route.fulfill({ contentType: 'text/html', body: `<script src="/tf.min.js"></script>` });
        const file = url.pathname === '/tf.min.js' ? TF_JS : path.join(url.pathname.startsWith('/b/') ? bucketsDir : freeDir, url.pathname.slice(3));
        return route.fulfill({ body: fs.readFileSync(file), contentType: file.endsWith('.json') ? 'application/json' : 'application/octet-stream' });
      });
      await page.goto('http://edgebert.local/');
      const r = await page.evaluate(pageRun, { graphFiles: graphFiles[kind], calls: calls[kind], outputs, shapesUniforms });
      await page.close();
      if (r.backend !== 'webgl') throw new Error(`the page ran on ${r.backend}, not webgl`);
      const seen = new Set();
      const fresh = [], repeat = [];
      for (const row of r.rows) (seen.has(row.T) ? repeat : fresh).push(row.ms), seen.add(row.T);
      const total = r.rows[r.rows.length - 1].programs - r.afterLoad;
      console.log(`| ${kind} (${seen.size} shapes) | ${shapesUniforms} | ${total} | ${median(fresh).toFixed(1)} (n=${fresh.length}) | ${repeat.length ? median(repeat).toFixed(1) : '-'} (n=${repeat.length}) | ${r.rows.length} |`);
      if (!shapesUniforms && kind === 'buckets') console.error(`renderer: ${r.renderer}`);
    }
  }
} finally {
  await browser.close();
}
