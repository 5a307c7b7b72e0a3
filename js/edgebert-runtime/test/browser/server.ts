/** A static HTTP server for the browser test: URL prefixes mapped to folders, nothing outside them served. */
import fs from 'node:fs';
import http from 'node:http';
import path from 'node:path';

const TYPES: Record<string, string> = {
  '.html': 'text/html', '.js': 'text/javascript', '.mjs': 'text/javascript', '.json': 'application/json', '.wasm': 'application/wasm',
};

export interface Server {
  url: string;
  close(): Promise<void>;
}

function fileFor(urlPath: string, mounts: Record<string, string>): string | null {
  for (const [prefix, dir] of Object.entries(mounts)) {
    if (!urlPath.startsWith(prefix)) continue;
    const file = path.resolve(dir, decodeURIComponent(urlPath.slice(prefix.length)));
    return file.startsWith(path.resolve(dir) + path.sep) && fs.existsSync(file) && fs.statSync(file).isFile() ? file : null;
  }
  return null;
}

export async function serve(mounts: Record<string, string>): Promise<Server> {
  const server = http.createServer((req, res) => {
    const file = fileFor(new URL(req.url ?? '/', 'http://x').pathname, mounts);
    if (!file) {
      res.writeHead(404).end();
      return;
    }
    res.writeHead(200, { 'content-type': TYPES[path.extname(file)] ?? 'application/octet-stream' });
    fs.createReadStream(file).pipe(res);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as { port: number };
  return { url: `http://127.0.0.1:${port}/`, close: () => new Promise((resolve) => server.close(() => resolve())) };
}
