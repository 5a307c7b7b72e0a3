/**
 * End to end in headless Chromium (Debian `chromium`, driven by playwright-core): the web page loads the export
 * with the shared core on the wasm backend, we type a query and see the expected top result.
 * CHROMIUM=/path/to/chromium overrides /usr/bin/chromium. Needs the export and web/dist (scripts/prepare.sh).
 */
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';

import { chromium, type Browser, type Page } from 'playwright-core';

import { APP_DIR } from '../../src/node';
import { NO_MODEL } from '../helpers';
import { startServer } from '../../scripts/serve-web.mjs';

const CHROMIUM = process.env.CHROMIUM ?? '/usr/bin/chromium';
const FLAGS = [
  '--headless',
  '--no-sandbox',
  '--disable-gpu',
  '--disable-background-networking',
  '--disable-component-update',
  '--disable-sync',
  '--no-first-run',
];
const QUERIES = [
  { query: 'my bicycle tire is flat', top: 'bike' },
  { query: 'how often should I feed my sourdough starter?', top: 'sourdough' },
  { query: 'what to do about jet lag after a long flight', top: 'jetlag' },
];

function skipReason(): string | false {
  if (NO_MODEL) return NO_MODEL;
  if (!fs.existsSync(path.join(APP_DIR, 'web', 'dist', 'main.js'))) return 'web/dist is not built: run node scripts/build-web.mjs';
  return false;
}

describe('web page in headless Chromium', { skip: skipReason() }, () => {
  let server: { url: string; close: () => Promise<void> };
  let browser: Browser;
  let page: Page;
  const consoleLines: string[] = [];

  before(async () => {
    assert.ok(fs.existsSync(CHROMIUM), `no Chromium at ${CHROMIUM}: run scripts/install.sh (apt-get install chromium)`);
    server = await startServer({ port: 0, isolate: process.env.EDGEBERT_WEB_ISOLATE === '1' });
    browser = await chromium.launch({ executablePath: CHROMIUM, args: FLAGS });
    page = await browser.newPage();
    page.on('console', (m) => consoleLines.push(`${m.type()}: ${m.text()}`));
    page.on('pageerror', (e) => consoleLines.push(`pageerror: ${e.message}`));
  });

  after(async () => {
    await browser?.close();
    await server?.close();
  });

  test('typing a query shows the expected top result', { timeout: 240_000 }, async () => {
    await page.goto(`${server.url}web/dist/index.html`);
    try {
      await page.waitForFunction(() => window.edgebertDemo?.ready || window.edgebertDemo?.error, null, { timeout: 180_000 });
    } catch (err) {
      throw new Error(`the page never became ready; browser console:\n${consoleLines.join('\n')}`, { cause: err });
    }
    const loaded = await page.evaluate(() => window.edgebertDemo);
    assert.equal(loaded.error, null, `page error: ${loaded.error}\n${consoleLines.join('\n')}`);
    assert.equal(loaded.backend, 'wasm');

    for (const [i, q] of QUERIES.entries()) {
      await page.fill('#query', q.query);
      await page.click('#search');
      await page.waitForFunction((n) => window.edgebertDemo.queryMs.length === n, i + 1, { timeout: 60_000 });
      const topId = await page.getAttribute('#results li:first-child', 'data-id');
      const topTitle = await page.textContent('#results li:first-child .title');
      assert.equal(topId, q.top, `"${q.query}" -> ${topId} (${topTitle})`);
    }
    // A few more runs of the same query for a steadier latency figure.
    for (let i = 0; i < 5; i++) {
      const n = await page.evaluate(() => window.edgebertDemo.queryMs.length);
      await page.click('#search');
      await page.waitForFunction((m) => window.edgebertDemo.queryMs.length === m + 1, n, { timeout: 60_000 });
    }
    const { queryMs, loadMs, model, backend } = await page.evaluate(() => window.edgebertDemo);
    const sorted = [...queryMs].sort((a, b) => a - b);
    const median = sorted[Math.floor(sorted.length / 2)];
    console.log(
      `chromium ${backend}: ${model}: load ${(loadMs / 1000).toFixed(1)} s, query median ${median.toFixed(0)} ms ` +
        `(min ${sorted[0].toFixed(0)}, n=${sorted.length})`,
    );
  });
});
