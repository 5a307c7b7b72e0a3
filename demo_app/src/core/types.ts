/** The parts of an edgebert export manifest (`edgebert.json`) that the demo reads. */
export interface InputSpec {
  name: string;
  dtype: string;
  shape: (number | string)[];
}

export interface ExportManifest {
  name: string;
  target: string;
  quantization: string;
  seq_len: number;
  /** Sequence-length buckets (edgebert export --seq-len 16,32,…): one graph each (`model_file`), one weight shard. */
  buckets?: { seq_len: number; model_file?: string }[];
  inputs: InputSpec[];
  /** What the export computes: feature-extraction (the default), text-classification, … */
  task?: string;
  outputs: { name: string; shape: (number | string)[]; normalized?: boolean; labels?: string[] }[];
  model: {
    family: string;
    pooling?: string;
    hidden_size: number;
    layers: number;
    do_lower_case?: boolean;
    id2label?: Record<string, string>;
  };
  target_details: {
    weight_shards: string[];
    output_nodes: Record<string, string>;
    input_nodes?: Record<string, string>;
  };
  /** edgebert's own check of the export against PyTorch: the worst cosine, and the bound it had to reach. */
  parity?: { min_cosine: number; threshold?: number };
}

/** A note bundled with the app. */
export interface Note {
  id: string;
  title: string;
  text: string;
}

/** `assets/note_embeddings.json`, written by scripts/precompute.ts with the same export. */
export interface NoteEmbeddings {
  model: { name: string; quantization: string; seq_len: number; hidden_size: number };
  dim: number;
  /** The text that was embedded for each note: `${title}. ${text}` (see noteText()). */
  ids: string[];
  embeddings: number[][];
}

export interface SearchHit {
  note: Note;
  score: number;
}
