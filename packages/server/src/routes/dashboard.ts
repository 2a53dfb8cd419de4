/**
 * The web dashboard's files at /ojs/admin/ (packages/dashboard, built by
 * `npm ci`). The files carry no data and load without an API key; every
 * request the dashboard makes goes to the API with the key the operator
 * signs in with. Hashed assets are cached for good, index.html never.
 */
import fastifyStatic from '@fastify/static';
import { DASHBOARD_DIST, dashboardBuilt } from '@ojs/dashboard';
import type { FastifyInstance } from 'fastify';
import { DASHBOARD_PREFIX } from '../auth.ts';

/** Same-origin only: no inline script, no third party, not framed. */
const CSP =
  "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; " +
  "connect-src 'self'; font-src 'self'; base-uri 'none'; form-action 'self'; frame-ancestors 'none'";

export async function dashboardRoutes(app: FastifyInstance): Promise<void> {
  if (!dashboardBuilt()) {
    throw new Error(
      `The dashboard is not built (${DASHBOARD_DIST}index.html is missing): run ` +
        '`npm run build -w @ojs/dashboard`, or start with --no-dashboard.',
    );
  }
  // Relative, so the redirect holds behind a proxy that mounts the server under a prefix.
  app.get(DASHBOARD_PREFIX, (_request, reply) => reply.redirect('admin/'));
  await app.register(fastifyStatic, {
    root: DASHBOARD_DIST,
    prefix: `${DASHBOARD_PREFIX}/`,
    index: ['index.html'],
    cacheControl: false,
    setHeaders(reply, path) {
      reply.header(
        'Cache-Control',
        /-[A-Z0-9]{8}\.(js|css)$/.test(path) ? 'public, max-age=31536000, immutable' : 'no-cache',
      );
      reply.header('Content-Security-Policy', CSP);
      reply.header('X-Content-Type-Options', 'nosniff');
      reply.header('Referrer-Policy', 'no-referrer');
    },
  });
}
