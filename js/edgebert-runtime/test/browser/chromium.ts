/**
 * A test page in headless Chromium (Debian `chromium`, driven by playwright-core): esbuild bundles the page's entry
 * into a fresh folder, a local server serves it beside the given folders, Chromium opens it and waits until the page
 * has set its `window` function; `call` runs that function on a request and fails with the page's console.
 * CHROMIUM=/path/to/chromium overrides /usr/bin/chromium.
 */
import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

import * as esbuild from 'esbuild';
import { chromium, type Browser } from 'playwright-core';

import { serve, type Server } from './server.js';

export const CHROMIUM = process.env.CHROMIUM ?? '/usr/bin/chromium';
/** The package's folder: the page's `/pkg/` (its node_modules hold the runtimes' wasm files). */
export const PACKAGE = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..', '..');

export interface TestPage {
  call<Request, Answer>(request: Request): Promise<Answer>;
  close(): Promise<void>;
}

/** `entry` (a .ts file setting `window[fn]`) bundled and opened at `/page/`, with `mounts` (URL prefix → folder). */
export async function openTestPage(entry: string, fn: string, mounts: Record<string, string>, flags: string[]): Promise<TestPage> {
  assert.ok(fs.existsSync(CHROMIUM), `no Chromium at ${CHROMIUM}: apt-get install chromium (or set CHROMIUM=...)`);
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'edgebert-runtime-page-'));
  let server: Server | undefined;
  let browser: Browser | undefined;
  const close = async (): Promise<void> => {
    await browser?.close();
    await server?.close();
    fs.rmSync(dir, { recursive: true, force: true });
  };
  const messages: string[] = [];
  try {
    await esbuild.build({
      entryPoints: [entry], bundle: true, format: 'esm', platform: 'browser', target: 'es2022', outfile: path.join(dir, 'page.js'), logLevel: 'error',
    });
    fs.writeFileSync(path.join(dir, 'index.html'), '<!doctype html><meta charset="utf-8"><script type="module" src="page.js"></script>');
    server = await serve({ '/page/': dir, '/pkg/': PACKAGE, ...mounts });
    browser = await chromium.launch({ executablePath: CHROMIUM, args: flags }); // a fresh temporary profile per launch
    const page = await browser.newPage();
    page.on('console', (m) => messages.push(`${m.type()}: ${m.text()}`));
    page.on('pageerror', (e) => messages.push(`pageerror: ${e.message}`));
    await page.goto(`${server.url}page/index.html`);
    await page.waitForFunction((name) => name in window, fn, { timeout: 60_000 });
    return {
      call: <Request, Answer>(request: Request) =>
        page
          .evaluate(([name, r]) => (window as unknown as Record<string, (r: unknown) => Promise<unknown>>)[name as string](r), [fn, request] as const)
          .catch((err: Error) => assert.fail(`${err.message}\n${messages.join('\n')}`)) as Promise<Answer>,
      close,
    };
  } catch (err) {
    await close();
    throw err;
  }
}
