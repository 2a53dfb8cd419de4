/**
 * Keeps `npm ci` working: this workplace's registry serves only the Linux
 * glibc builds of Biome's platform packages, so `npm install` writes a lock
 * without the other platforms' optional entries, and `npm ci` then refuses
 * the lock as out of sync. This adds those entries (optional, with their
 * os/cpu, so npm skips them on other platforms without fetching anything).
 * Run after any `npm install` that rewrites package-lock.json:
 *   npx node scripts/complete-lockfile.ts
 */
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { ROOT } from './lib.ts';

interface LockEntry {
  version?: string;
  optionalDependencies?: Record<string, string>;
  [key: string]: unknown;
}

const PLATFORM = /^@biomejs\/cli-(android|darwin|linux|win32)-(arm64|x64)(-musl)?$/;

const file = join(ROOT, 'package-lock.json');
const lock = JSON.parse(readFileSync(file, 'utf8')) as { packages: Record<string, LockEntry> };
let added = 0;
for (const entry of Object.values(lock.packages)) {
  for (const [name, version] of Object.entries(entry.optionalDependencies ?? {})) {
    const match = PLATFORM.exec(name);
    const flatKey = `node_modules/${name}`;
    if (match === null || lock.packages[flatKey] !== undefined) continue;
    const [, os, cpu, musl] = match;
    const platformEntry: LockEntry = { version, cpu: [cpu], dev: true };
    if (musl) platformEntry.libc = ['musl'];
    Object.assign(platformEntry, { license: 'MIT OR Apache-2.0', optional: true, os: [os] });
    lock.packages[flatKey] = platformEntry;
    added++;
  }
}
const sorted = Object.fromEntries(
  Object.entries(lock.packages).sort(([a], [b]) => (a === '' ? -1 : b === '' ? 1 : a < b ? -1 : 1)),
);
writeFileSync(file, `${JSON.stringify({ ...lock, packages: sorted }, null, 2)}\n`);
process.stdout.write(`complete-lockfile: ${added} platform entries added\n`);
