/**
 * Where the built dashboard lives. The server serves this directory at
 * /ojs/admin/; `npm ci` builds it (the package's `prepare` script).
 */
import { existsSync } from 'node:fs';
import { fileURLToPath } from 'node:url';

// public/ at the package root: beside src/ here, beside dist/ (compiled) when installed.
export const DASHBOARD_DIST = fileURLToPath(new URL('../public/', import.meta.url));

/** True once `npm run build -w @ojs/dashboard` (or `npm ci`) has produced the assets. */
export function dashboardBuilt(): boolean {
  return existsSync(`${DASHBOARD_DIST}index.html`);
}
