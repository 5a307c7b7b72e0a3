// A tiny static file server rooted at demo_app/ for the web page (web/dist/) and its assets (assets/).
//   node scripts/serve-web.mjs [--port 8080] [--no-isolate]   then open http://localhost:8080/web/dist/
// --ext DIR serves DIR under /ext/ (open /web/dist/?model=/ext/ to try another export without preparing it).
// It sends the COOP/COEP headers of cross-origin isolation (Cross-Origin-Opener-Policy: same-origin,
// Cross-Origin-Embedder-Policy: require-corp): the page then has SharedArrayBuffer and can run its wasm runtimes on
// two threads (web/main.ts: where the machine has 4 logical cores or more, or with ?threads=2). Any server of the
// page needs those two headers for threads; --no-isolate leaves them out (one thread). Also imported by the browser test and the bench: startServer({ port: 0, isolate }) -> { url, close }.
import fs from 'node:fs';
import http from 'node:http';
import path from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';

const APP_DIR = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const TYPES = {
  '.html': 'text/html; charset=utf-8',
  '.js': 'text/javascript; charset=utf-8',
  '.mjs': 'text/javascript; charset=utf-8',
  '.map': 'application/json',
  '.json': 'application/json; charset=utf-8',
  '.wasm': 'application/wasm',
  '.bin': 'application/octet-stream',
  '.txt': 'text/plain; charset=utf-8',
};

/**
 * @param {{ port?: number, isolate?: boolean, root?: string, ext?: string }} [options]
 *   ext: another directory served under /ext/ (e.g. a second export, for the page's ?model=/ext/ parameter).
 * @returns {Promise<{ url: string, close: () => Promise<void> }>}
 */
export function startServer({ port = 0, isolate = false, root = APP_DIR, ext = undefined } = {}) {
  const server = http.createServer((req, res) => {
    let urlPath = decodeURIComponent(new URL(req.url ?? '/', 'http://x').pathname);
    let base = root;
    if (ext && urlPath.startsWith('/ext/')) {
      base = path.resolve(ext);
      urlPath = urlPath.slice('/ext'.length);
    }
    let file = path.normalize(path.join(base, urlPath));
    if (!file.startsWith(base + path.sep) && file !== base) {
      res.writeHead(403).end();
      return;
    }
    if (fs.existsSync(file) && fs.statSync(file).isDirectory()) file = path.join(file, 'index.html');
    if (!fs.existsSync(file)) {
      res.writeHead(404, { 'content-type': 'text/plain' }).end(`not found: ${urlPath}`);
      return;
    }
    const headers = {
      'content-type': TYPES[path.extname(file)] ?? 'application/octet-stream',
      'content-length': fs.statSync(file).size,
      'cache-control': 'no-store',
    };
    if (isolate) {
      headers['cross-origin-opener-policy'] = 'same-origin';
      headers['cross-origin-embedder-policy'] = 'require-corp';
    }
    res.writeHead(200, headers);
    fs.createReadStream(file).pipe(res);
  });
  return new Promise((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, '127.0.0.1', () => {
      const { port: actual } = server.address();
      resolve({
        url: `http://127.0.0.1:${actual}/`,
        close: () => new Promise((done) => server.close(() => done())),
      });
    });
  });
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? '').href) {
  const arg = (name) => {
    const i = process.argv.indexOf(name);
    return i > 0 ? process.argv[i + 1] : undefined;
  };
  startServer({ port: Number(arg('--port') ?? 8080), isolate: !process.argv.includes('--no-isolate'), ext: arg('--ext') }).then(({ url }) =>
    console.log(`serving ${APP_DIR} at ${url}: open ${url}web/dist/`),
  );
}
