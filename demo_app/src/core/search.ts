/** Cosine ranking of notes against a query embedding, and `search(query, k)` on top of an Embedder. */
import { cosine } from 'edgebert-runtime';

import type { Embedder } from './model';
import type { Note, NoteEmbeddings, SearchHit } from './types';

export { cosine };

/** The text embedded for a note (the precompute script and the tests use this same function). */
export function noteText(note: Note): string {
  return `${note.title}. ${note.text}`;
}

/** The notes' embeddings by `embedder`, recorded with the export they come from (what `NoteIndex.mismatch` checks);
 * `round` rounds each value (the precompute script's file keeps 7 decimals). */
export async function embedNotes(embedder: Embedder, notes: Note[], round: (x: number) => number = (x) => x): Promise<NoteEmbeddings> {
  const m = embedder.manifest;
  const vectors = await embedder.embed(notes.map(noteText));
  return {
    model: { name: m.name, quantization: m.quantization, seq_len: m.seq_len, hidden_size: m.model.hidden_size },
    dim: embedder.dim,
    ids: notes.map((n) => n.id),
    embeddings: vectors.map((v) => Array.from(v, round)),
  };
}

/** The k best (highest cosine) of `vectors` for `query`, as [index, score], best first. */
export function topK(query: ArrayLike<number>, vectors: ArrayLike<number>[], k: number): [number, number][] {
  const scored = vectors.map((v, i) => [i, cosine(query, v)] as [number, number]);
  scored.sort((x, y) => y[1] - x[1] || x[0] - y[0]);
  return scored.slice(0, Math.max(0, k));
}

export interface SearchResult {
  hits: SearchHit[];
  /** Query embedding time (tokenise + model), milliseconds. */
  embedMs: number;
  /** Ranking time, milliseconds. */
  rankMs: number;
}

const now = (): number => (typeof performance !== 'undefined' ? performance.now() : Date.now());

/** Bundled notes + their precomputed embeddings, searched with query embeddings from the same model. */
export class NoteIndex {
  private readonly vectors: Float32Array[];

  constructor(
    readonly embedder: Embedder,
    readonly notes: Note[],
    embeddings: NoteEmbeddings,
  ) {
    const m = embedder.manifest;
    if (embeddings.dim !== embedder.dim || embeddings.model.hidden_size !== m.model.hidden_size) {
      throw new Error(
        `note embeddings have dimension ${embeddings.dim} but the model outputs ${embedder.dim}; ` +
          'run scripts/prepare.sh again',
      );
    }
    const byId = new Map(embeddings.ids.map((id, i) => [id, embeddings.embeddings[i]]));
    this.vectors = notes.map((n) => {
      const v = byId.get(n.id);
      if (!v) throw new Error(`note '${n.id}' has no precomputed embedding; run scripts/prepare.sh again`);
      return Float32Array.from(v);
    });
  }

  /** Whether the embeddings were computed by a model other than the loaded one (results would be meaningless). */
  static mismatch(embedder: Embedder, embeddings: NoteEmbeddings): string | null {
    const m = embedder.manifest;
    const e = embeddings.model;
    if (e.name !== m.name || e.quantization !== m.quantization || e.seq_len !== m.seq_len) {
      return `note embeddings come from ${e.name}/${e.quantization}/${e.seq_len}, the model is ${m.name}/${m.quantization}/${m.seq_len}`;
    }
    return null;
  }

  async search(query: string, k = 5): Promise<SearchResult> {
    const q = await this.embedder.embedOne(query);
    const embedMs = this.embedder.lastEmbedMs;
    const start = now();
    const hits = topK(q, this.vectors, k).map(([i, score]) => ({ note: this.notes[i], score }));
    return { hits, embedMs, rankMs: now() - start };
  }
}
