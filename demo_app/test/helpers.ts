import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { test } from 'node:test';

import { MODEL_DIR, modelPresent, readJson, readManifest } from '../src/node';

export const FIXTURES = path.join(path.dirname(new URL(import.meta.url).pathname), 'fixtures');
/** Written by scripts/prepare.sh (scripts/make_fixtures.py) beside the export it was made for. */
export const REFERENCE = path.join(MODEL_DIR, '..', 'reference.json');

export interface ReferenceFixture {
  model: { name: string; seq_len: number; hidden_size: number; layers: number; do_lower_case: boolean | null };
  tokens: { text: string; input_ids: number[]; attention_mask: number[]; token_type_ids: number[] }[];
  embeddings: { text: string; embedding: number[] }[];
}

export const reference: ReferenceFixture = fs.existsSync(REFERENCE)
  ? readJson<ReferenceFixture>(REFERENCE)
  : { model: { name: '', seq_len: 0, hidden_size: 0, layers: 0, do_lower_case: null }, tokens: [], embeddings: [] };

/** false when the export is in place, else the reason to skip (node:test prints it). */
export const NO_MODEL: string | false =
  modelPresent() && fs.existsSync(REFERENCE)
    ? false
    : `no TF.js export and reference in ${MODEL_DIR} and ${REFERENCE}: run \`bash scripts/prepare.sh\` ` +
      '(the pytest wrapper tests/test_demo_app.py does)';

/** false when the export is the model assets/reference.json was made for, else why not. */
export function fixtureMismatch(): string | false {
  if (NO_MODEL) return NO_MODEL;
  const m = readManifest();
  const f = reference.model;
  if (m.name !== f.name || m.seq_len !== f.seq_len || m.model.hidden_size !== f.hidden_size) {
    return (
      `the export in ${MODEL_DIR} is ${m.name} (seq_len ${m.seq_len}), the PyTorch fixture was made for ${f.name} ` +
      `(seq_len ${f.seq_len}): run bash scripts/prepare.sh (or scripts/make_fixtures.py) to compare against it`
    );
  }
  return false;
}

/** Env var that lets `npm test` pass while a suite cannot run (no export yet): a partial run must be asked for. */
export const ALLOW_SKIP = 'EDGEBERT_DEMO_ALLOW_SKIP';

/**
 * A suite that cannot run (`reason`) fails the run with that reason, so `npm test` on a fresh checkout is red
 * rather than green with nothing tested; EDGEBERT_DEMO_ALLOW_SKIP=1 turns the failure into node:test's skip.
 */
export function failUnlessReady(suite: string, reason: string | false): void {
  if (reason && process.env[ALLOW_SKIP] !== '1') {
    test(`${suite} can run`, () => assert.fail(`${reason} (or set ${ALLOW_SKIP}=1 to run the other suites alone)`));
  }
}
