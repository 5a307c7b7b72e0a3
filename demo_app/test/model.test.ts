/**
 * The exported TF.js model (Node, wasm backend, shared core) against PyTorch, and search on top of it; the same
 * student's ONNX export on onnxruntime-web against PyTorch and against TF.js's search.
 * Needs the export in assets/model (scripts/prepare.sh); without it the run fails with the reason
 * (EDGEBERT_DEMO_ALLOW_SKIP=1: skips instead).
 */
import assert from 'node:assert/strict';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';

import { Embedder } from '../src/core/model';
import { NoteIndex, cosine, noteText, topK } from '../src/core/search';
import type { Note } from '../src/core/types';
import { ONNX_MODEL_DIR, loadEmbedder, loadOnnxEmbedder, readJson, readNoteEmbeddings, readNotes, useBackend } from '../src/node';
import { FIXTURES, NO_MODEL, failUnlessReady, fixtureMismatch, reference } from './helpers';

interface SearchFixture {
  docs: Note[];
  queries: { query: string; top: string }[];
  app_queries: { query: string; top: string }[];
}
const searchFixture = readJson<SearchFixture>(path.join(FIXTURES, 'search.json'));

/** cos ≥ 0.999 against PyTorch for fp32/fp16 weights; uint8 weights are allowed the export's own 0.99. */
/** The bound edgebert's export check held this export to (its manifest), else fp32's. */
function minCosine(manifest: Embedder['manifest']): number {
  return manifest.parity?.threshold ?? 0.999;
}

let embedder: Embedder;

failUnlessReady('exported model', NO_MODEL);
describe('exported model', { skip: NO_MODEL }, () => {
  before(async () => {
    await useBackend('wasm');
    embedder = await loadEmbedder();
  });
  after(() => embedder?.dispose());

  test('embeddings match PyTorch (cos ≥ the export check\'s bound)', { skip: fixtureMismatch() }, async () => {
    const bound = minCosine(embedder.manifest);
    const got = await embedder.embed(reference.embeddings.map((e) => e.text));
    const cosines = got.map((v, i) => cosine(v, reference.embeddings[i].embedding));
    console.log(`cosine vs PyTorch: min ${Math.min(...cosines).toFixed(6)} over ${cosines.length} sentences`);
    cosines.forEach((c, i) => assert.ok(c >= bound, `"${reference.embeddings[i].text.slice(0, 40)}": cos ${c} < ${bound}`));
  });

  test('embeddings are L2-normalised and have the manifest width', async () => {
    const [v] = await embedder.embed(['unit length?']);
    assert.equal(v.length, embedder.manifest.model.hidden_size);
    const norm = Math.sqrt(v.reduce((s, x) => s + x * x, 0));
    assert.ok(Math.abs(norm - 1) < 1e-4, `norm ${norm}`);
  });

  test('search returns the expected top hit on the small fixture', async () => {
    const docs = searchFixture.docs;
    const vectors = await embedder.embed(docs.map(noteText));
    for (const q of searchFixture.queries) {
      const [best] = topK(await embedder.embedOne(q.query), vectors, 1);
      assert.equal(docs[best[0]].id, q.top, `query "${q.query}" ranked ${docs[best[0]].id} first`);
    }
  });

  test('bundled note embeddings come from this export and are current', async () => {
    const notes = readNotes();
    const stored = readNoteEmbeddings();
    assert.equal(NoteIndex.mismatch(embedder, stored), null, 'run scripts/prepare.sh again');
    assert.deepEqual(stored.ids, notes.map((n) => n.id), 'notes.json changed since the precompute: run scripts/prepare.sh');
    const sample = [0, Math.floor(notes.length / 2), notes.length - 1];
    const fresh = await embedder.embed(sample.map((i) => noteText(notes[i])));
    sample.forEach((i, j) => {
      const c = cosine(fresh[j], stored.embeddings[i]);
      assert.ok(c >= 0.9999, `note ${notes[i].id}: stored vs fresh cos ${c}`);
    });
  });

  test('NoteIndex.search ranks the bundled notes', async () => {
    const index = new NoteIndex(embedder, readNotes(), readNoteEmbeddings());
    for (const q of searchFixture.app_queries) {
      const result = await index.search(q.query, 3);
      assert.equal(result.hits.length, 3);
      assert.equal(result.hits[0].note.id, q.top, `"${q.query}" -> ${result.hits.map((h) => h.note.id).join(', ')}`);
      assert.ok(result.hits[0].score >= result.hits[1].score);
      assert.ok(result.embedMs > 0);
    }
  });
});

describe('the same student on onnxruntime-web (the ONNX export in assets/model-onnx)', { skip: NO_MODEL }, () => {
  let onnx: Embedder;
  before(async () => {
    onnx = await loadOnnxEmbedder(ONNX_MODEL_DIR); // prepare.sh writes it beside the TF.js export: missing fails, not skips
  });
  after(() => onnx?.dispose());

  test('embeddings match PyTorch within the ONNX export\'s own bound', { skip: fixtureMismatch() }, async () => {
    for (const { text, embedding } of reference.embeddings) {
      const c = cosine(await onnx.embedOne(text), embedding);
      assert.ok(c >= minCosine(onnx.manifest), `"${text}": cos ${c} < ${minCosine(onnx.manifest)}`);
    }
  });

  test('the search finds the same top-5 notes, in the same order, as TF.js', async () => {
    await useBackend('wasm');
    const tfjs = await loadEmbedder();
    try {
      const notes = readNotes();
      const texts = notes.map(noteText);
      const [onnxNotes, tfjsNotes] = [await onnx.embed(texts), await tfjs.embed(texts)]; // each runtime its own vectors
      const topFive = async (e: Embedder, vectors: Float32Array[], query: string) =>
        topK(await e.embedOne(query), vectors, 5).map(([i]) => notes[i].id);
      for (const q of searchFixture.app_queries) {
        assert.deepEqual(await topFive(onnx, onnxNotes, q.query), await topFive(tfjs, tfjsNotes, q.query), `"${q.query}"`);
      }
    } finally {
      tfjs.dispose();
    }
  });
});

test('cosine and topK', () => {
  assert.equal(cosine([1, 0], [1, 0]), 1);
  assert.equal(cosine([1, 0], [0, 2]), 0);
  assert.equal(cosine([0, 0], [1, 1]), 0);
  assert.deepEqual(
    topK([1, 0], [[0, 1], [1, 0.1], [-1, 0]], 2).map(([i]) => i),
    [1, 0],
  );
  assert.throws(() => cosine([1], [1, 2]));
});
