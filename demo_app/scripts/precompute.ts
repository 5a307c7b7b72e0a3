/**
 * Embed the bundled notes with the app's own TF.js export (Node, wasm backend, the shared core module) and
 * write assets/note_embeddings.json. Run by scripts/prepare.sh after each export:
 *   node --import tsx scripts/precompute.ts [--model-dir assets/model]
 */
import fs from 'node:fs';
import path from 'node:path';

import { embedNotes } from '../src/core/search';
import type { NoteEmbeddings } from '../src/core/types';
import { ASSETS_DIR, MODEL_DIR, loadEmbedder, readManifest, readNotes, useBackend } from '../src/node';

/** The one weights file name the app require()s (the tfjs converter's name for a single-shard export). */
const APP_SHARD = 'group1-shard1of1.bin';

async function main(): Promise<void> {
  const i = process.argv.indexOf('--model-dir');
  const modelDir = i > 0 ? path.resolve(process.argv[i + 1]) : MODEL_DIR;
  const manifest = readManifest(modelDir);
  const shards = manifest.target_details?.weight_shards ?? [];
  if (shards.length !== 1 || shards[0] !== APP_SHARD) {
    throw new Error(
      `the app bundles the export as model.json + ${APP_SHARD} (src/mobile/bundledModel.ts), ` +
        `but ${modelDir} has weight shards ${JSON.stringify(shards)}`,
    );
  }
  const backend = await useBackend('wasm');
  const embedder = await loadEmbedder(modelDir);
  const notes = readNotes();
  const ids = new Set<string>();
  for (const n of notes) {
    if (ids.has(n.id)) throw new Error(`duplicate note id '${n.id}' in assets/notes.json`);
    ids.add(n.id);
  }
  const start = performance.now();
  const out: NoteEmbeddings = await embedNotes(embedder, notes, (x) => Number(x.toFixed(7)));
  const seconds = (performance.now() - start) / 1000;
  const m = embedder.manifest;
  const file = path.join(ASSETS_DIR, 'note_embeddings.json');
  fs.writeFileSync(file, JSON.stringify(out) + '\n');
  console.error(
    `precompute: ${notes.length} notes embedded with ${m.name} (${m.quantization}, ${backend}) in ${seconds.toFixed(1)} s -> ${file}`,
  );
  embedder.dispose();
}

main().catch((err) => {
  console.error(err instanceof Error ? err.stack : err);
  process.exit(1);
});
