/** `npm test` without the Python test's cases file is red, naming what to run (EDGEBERT_RUNTIME_ALLOW_SKIP=1: unit tests alone). */
import assert from 'node:assert/strict';
import { test } from 'node:test';

import { ALLOW_SKIP, CASES_ENV } from './helpers.js';

if (!process.env[CASES_ENV] && process.env[ALLOW_SKIP] !== '1') {
  test('the exports to run are given', () => {
    assert.fail(`${CASES_ENV} is not set: run .venv/bin/python -m pytest tests/test_js_runtime.py, which makes the exports ` +
      `and their references (or set ${ALLOW_SKIP}=1 to run the unit tests alone)`);
  });
}
