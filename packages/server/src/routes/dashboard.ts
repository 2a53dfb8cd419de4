/**
 * The web dashboard's files at /ojs/admin/ (packages/dashboard, built by
 * `npm ci`). The files carry no data and load without an API key; every
 * request the dashboard makes goes to the API with the key the operator
 * signs in with. Hashed assets are cached for good, index.html never (it
 * is revalidated by its ETag).
 *
 * The build is one flat folder (index.html and esbuild's hashed .js and
 * .css), so a few lines of node:fs serve it: @fastify/static, with its
 * ~30 modules loaded at every start, served it before (decision 0098).
 */
import { readFile as readFileCallback, stat as statCallback } from 'node:fs';
import { extname, join } from 'node:path';
import { promisify } from 'node:util';
import { DASHBOARD_DIST, dashboardBuilt } from '@ojs/dashboard';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { DASHBOARD_PREFIX } from '../auth.ts';

// Not node:fs/promises: loading it (with readline, which it brings) costs every server
// about 1 MB of memory at start (decision 0108).
const readFile = promisify(readFileCallback);
const stat = promisify(statCallback);

/** Same-origin only: no inline script, no third party, not framed. */
const CSP =
  "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; " +
  "connect-src 'self'; font-src 'self'; base-uri 'none'; form-action 'self'; frame-ancestors 'none'";

const TYPES: Record<string, string> = {
  '.html': 'text/html; charset=utf-8',
  '.js': 'text/javascript; charset=utf-8',
  '.css': 'text/css; charset=utf-8',
  '.map': 'application/json; charset=utf-8',
  '.json': 'application/json; charset=utf-8',
  '.svg': 'image/svg+xml',
  '.png': 'image/png',
  '.ico': 'image/x-icon',
  '.woff2': 'font/woff2',
  '.txt': 'text/plain; charset=utf-8',
};

/** A file of the flat build folder: no separator, no leading dot, a known type. */
const FILE_NAME = /^[A-Za-z0-9_-][A-Za-z0-9._-]*$/;

export async function dashboardRoutes(app: FastifyInstance): Promise<void> {
  if (!dashboardBuilt()) {
    throw new Error(
      `The dashboard is not built (${DASHBOARD_DIST}index.html is missing): run ` +
        '`npm run build -w @ojs/dashboard`, or start with --no-dashboard.',
    );
  }
  // Relative, so the redirect holds behind a proxy that mounts the server under a prefix.
  app.get(DASHBOARD_PREFIX, (_request, reply) => reply.redirect('admin/'));
  const serveFile = async (name: string, request: FastifyRequest, reply: FastifyReply) => {
    const type = TYPES[extname(name)];
    if (!FILE_NAME.test(name) || type === undefined) return reply.callNotFound();
    const path = join(DASHBOARD_DIST, name);
    let info: Awaited<ReturnType<typeof stat>>;
    try {
      info = await stat(path);
    } catch {
      return reply.callNotFound();
    }
    if (!info.isFile()) return reply.callNotFound();
    const etag = `W/"${info.size.toString(16)}-${Math.floor(info.mtimeMs).toString(16)}"`;
    reply
      .header(
        'Cache-Control',
        /-[A-Z0-9]{8}\.(js|css)$/.test(name) ? 'public, max-age=31536000, immutable' : 'no-cache',
      )
      .header('Content-Security-Policy', CSP)
      .header('X-Content-Type-Options', 'nosniff')
      .header('Referrer-Policy', 'no-referrer')
      .header('ETag', etag)
      .header('Last-Modified', info.mtime.toUTCString());
    if (request.headers['if-none-match'] === etag) return reply.code(304).send();
    return reply.type(type).send(await readFile(path));
  };
  app.get(`${DASHBOARD_PREFIX}/`, (request, reply) => serveFile('index.html', request, reply));
  app.get<{ Params: { '*': string } }>(`${DASHBOARD_PREFIX}/*`, (request, reply) =>
    serveFile(request.params['*'], request, reply),
  );
}
