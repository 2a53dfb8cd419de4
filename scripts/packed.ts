/**
 * Shared by the packed-tarball tests (@ojs/sdk, @ojs/cli): pack a workspace
 * package as `npm pack` would for publishing, install tarballs in a
 * throwaway folder outside the repository, and get Node binaries of other
 * majors (the `node` npm package) cached under node_modules/.cache, so that
 * only the first run downloads them.
 */
import { execFile } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { ROOT } from './lib.ts';

export const run = promisify(execFile);

const NPM_FLAGS = ['--no-audit', '--no-fund', '--loglevel=error'];

/** Every workspace package `@ojs/cli` (the `ojs` command and its server) needs installed. */
export const SERVER_PACKAGES = [
  '@ojs/sdk',
  '@ojs/core',
  '@ojs/engine',
  '@ojs/server',
  '@ojs/dashboard',
  '@ojs/grpc',
  '@ojs/store-sqlite',
  '@ojs/store-postgres',
  '@ojs/store-redis',
  '@ojs/conformance',
  '@ojs/cli',
] as const;

/**
 * The tarball of a workspace package (`@ojs/sdk` -> packages/sdk) as
 * `npm pack` makes it for publishing, built in a staging folder under
 * `destination` (package-build.mjs stage): the package's own folder and
 * manifest are never changed, so tests running meanwhile are not affected.
 */
export async function pack(workspace: string, destination: string): Promise<string> {
  const folder = join(ROOT, 'packages', workspace.replace(/^@ojs\//, ''));
  const staged = join(destination, `stage-${workspace.replace(/\W+/g, '-')}`);
  await run(process.execPath, [join(ROOT, 'scripts/package-build.mjs'), 'stage', staged], {
    cwd: folder,
    maxBuffer: 16 * 1024 * 1024,
  });
  const { stdout } = await run(
    'npm',
    ['pack', staged, '--pack-destination', destination, '--loglevel=error'],
    { cwd: destination, maxBuffer: 16 * 1024 * 1024 },
  );
  const file = stdout.trim().split('\n').at(-1)!;
  return join(destination, file);
}

/** A fresh application folder outside the repository with the tarballs installed. */
export async function installApp(tarballs: string[], root = tmpdir()): Promise<string> {
  const app = mkdtempSync(join(root, 'ojs-packed-app-'));
  writeFileSync(
    join(app, 'package.json'),
    `${JSON.stringify({ name: 'packed-app', private: true, version: '1.0.0' })}\n`,
  );
  await run('npm', ['install', ...NPM_FLAGS, ...tarballs], {
    cwd: app,
    maxBuffer: 16 * 1024 * 1024,
    timeout: 300_000,
  });
  return app;
}

/**
 * `@ojs/cli` and everything it needs, packed and installed in a fresh folder
 * under `root` as a user installs them from npm: the installed `ojs`
 * command's built JavaScript (`entry`) and the app folder.
 */
export async function installServer(root: string): Promise<{ app: string; entry: string }> {
  const tarballs: string[] = [];
  for (const name of SERVER_PACKAGES) tarballs.push(await pack(name, root));
  const app = await installApp(tarballs, root);
  return { app, entry: join(app, 'node_modules/@ojs/cli/dist/main.js') };
}

/**
 * The `node` binary of a major version, installed once from the npm
 * registry into node_modules/.cache/ojs-node/<major> (installed beside and
 * renamed into place, so concurrent test files never see half an install).
 */
export async function nodeBinary(major: number): Promise<string> {
  const cache = join(ROOT, 'node_modules/.cache/ojs-node');
  const dir = join(cache, String(major));
  const binary = join(dir, 'node_modules/node/bin/node');
  if (existsSync(binary)) return binary;
  mkdirSync(cache, { recursive: true });
  const staging = mkdtempSync(join(cache, `.${major}-`));
  try {
    await run('npm', ['install', ...NPM_FLAGS, '--prefix', staging, `node@${major}`], {
      timeout: 300_000,
      maxBuffer: 16 * 1024 * 1024,
    });
    try {
      renameSync(staging, dir);
    } catch (error) {
      // Another test file installed the same major meanwhile: use theirs.
      if (!existsSync(binary)) throw error;
    }
  } finally {
    rmSync(staging, { recursive: true, force: true });
  }
  return binary;
}

/** TypeScript sources (not declarations) under `dir`: an installed package must have none. */
export async function typeScriptSources(dir: string): Promise<string[]> {
  const { stdout } = await run('find', [dir, '-name', '*.ts', '-not', '-name', '*.d.ts']);
  return stdout.split('\n').filter(Boolean);
}
