#!/usr/bin/env node
/**
 * Build and pack a workspace package for npm (see docs/decisions/0060).
 * Run in the package's folder (its npm scripts do):
 *
 *   node ../../scripts/package-build.mjs build         dist/: ESM .js + .d.ts (+ dist/cjs/: CommonJS)
 *   node ../../scripts/package-build.mjs stage DIR     DIR: the package as published (dist/,
 *                                                      its files, the published manifest); the
 *                                                      package's own folder is not touched
 *   node ../../scripts/package-build.mjs prepack       build, then point the manifest at dist/
 *   node ../../scripts/package-build.mjs postpack      restore the manifest
 *
 * Inside the repository the packages' `exports` name their TypeScript
 * sources (Node 24 runs them directly). Node refuses to strip types under
 * node_modules, so the published manifest must name the built JavaScript:
 * each `./src/X.ts` export becomes `{types, default: ./dist/X.js}` (with
 * `import`/`require` conditions when there is a CommonJS build), `bin` points
 * at dist/, and workspace-only fields go. `npm pack`/`npm publish` in the
 * package folder rewrite package.json in prepack, keeping the original in
 * `package.json.orig` that postpack puts back; tests use `stage` instead, so
 * they never change a manifest other tests resolve imports through.
 * The manifest's `ojsPack` says what else to do: `cjs: true` adds the
 * CommonJS build (the SDK), `esmOnly` lists exports published without it,
 * `copy` lists plain .js files to copy from src/ to dist/, `omit` lists
 * exports not to publish, `bundle` makes dist/ one esbuild bundle of the
 * listed entries and worker threads instead (bundle.mjs; @ojs/cli's `ojs`,
 * decision 0108).
 * Plain .mjs, so it runs on any Node the npm lifecycle finds.
 */
import { execFileSync } from 'node:child_process';
import {
  cpSync,
  existsSync,
  mkdirSync,
  readFileSync,
  renameSync,
  rmSync,
  writeFileSync,
} from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join, resolve } from 'node:path';

const dir = process.cwd();
const manifestPath = join(dir, 'package.json');
const savedPath = join(dir, 'package.json.orig');
const tsc = join(
  dirname(createRequire(import.meta.url).resolve('typescript/package.json')),
  'bin/tsc',
);

const readManifest = () => JSON.parse(readFileSync(manifestPath, 'utf8'));

/** Compiles the package into `outDir` (its dist/ folder): ESM, copied .js, and CommonJS if asked. */
async function build(outDir = join(dir, 'dist')) {
  const manifest = readManifest();
  rmSync(outDir, { recursive: true, force: true });
  // A command published as one bundle (decision 0108): no per-file emit.
  if (manifest.ojsPack?.bundle !== undefined) {
    const { bundle } = await import('./bundle.mjs');
    await bundle(dir, outDir, manifest);
    return;
  }
  const compile = (...args) =>
    execFileSync(process.execPath, [tsc, '-p', 'tsconfig.build.json', ...args], {
      cwd: dir,
      stdio: 'inherit',
    });
  compile('--outDir', outDir);
  // Plain JavaScript beside the sources (a worker thread's script): copied as is.
  for (const file of manifest.ojsPack?.copy ?? []) {
    cpSync(join(dir, file), join(outDir, file.replace(/^src\//, '')));
  }
  if (manifest.ojsPack?.cjs !== true) return;
  // The same sources as CommonJS: a second emit into dist/cjs, marked as
  // CommonJS by its own package.json so the .js files load with require().
  compile(
    '--outDir',
    join(outDir, 'cjs'),
    '--module',
    'commonjs',
    '--moduleResolution',
    'bundler',
    '--verbatimModuleSyntax',
    'false',
  );
  writeFileSync(join(outDir, 'cjs/package.json'), '{ "type": "commonjs" }\n');
}

const toDist = (source, ext) => source.replace(/^\.\/src\//, './dist/').replace(/\.ts$/, ext);

/** The manifest as published: exports and bin on dist/, no workspace-only fields. */
export function publishedManifest(manifest) {
  const omit = new Set(manifest.ojsPack?.omit ?? []);
  // Entries whose CommonJS emit cannot load (import.meta): offered to `import` only.
  const esmOnly = new Set(manifest.ojsPack?.esmOnly ?? []);
  const exports = {};
  for (const [entry, source] of Object.entries(manifest.exports ?? {})) {
    if (omit.has(entry)) continue;
    if (typeof source !== 'string' || !source.startsWith('./src/')) {
      exports[entry] = source;
      continue;
    }
    const esm = { types: toDist(source, '.d.ts'), default: toDist(source, '.js') };
    exports[entry] =
      manifest.ojsPack?.cjs === true && !esmOnly.has(entry)
        ? {
            import: esm,
            require: {
              types: esm.types.replace('./dist/', './dist/cjs/'),
              default: esm.default.replace('./dist/', './dist/cjs/'),
            },
          }
        : manifest.ojsPack?.cjs === true
          ? { import: esm }
          : esm;
  }
  const out = { ...manifest, exports };
  delete out.ojsPack;
  delete out.private;
  delete out.devDependencies;
  // The build and pack scripts need this repository; an installed package has nothing to run.
  delete out.scripts;
  if (Object.keys(exports).length === 0) delete out.exports;
  if (exports['.'] !== undefined) {
    out.main = manifest.ojsPack?.cjs === true ? './dist/cjs/index.js' : './dist/index.js';
    out.types = './dist/index.d.ts';
  }
  if (typeof manifest.bin === 'object') {
    out.bin = Object.fromEntries(
      Object.entries(manifest.bin).map(([name, path]) => [name, toDist(path, '.js')]),
    );
  }
  return out;
}

/** The package as it would be published, in `target` (dist/ built there, not in the package). */
async function stage(target) {
  const manifest = readManifest();
  rmSync(target, { recursive: true, force: true });
  mkdirSync(target, { recursive: true });
  await build(join(target, 'dist'));
  for (const file of manifest.files ?? []) {
    if (file !== 'dist' && existsSync(join(dir, file))) {
      cpSync(join(dir, file), join(target, file), { recursive: true });
    }
  }
  writeFileSync(
    join(target, 'package.json'),
    `${JSON.stringify(publishedManifest(manifest), null, 2)}\n`,
  );
}

function restore() {
  if (existsSync(savedPath)) renameSync(savedPath, manifestPath);
}

const command = process.argv[2];
if (command === 'build') await build();
else if (command === 'stage' && process.argv[3]) await stage(resolve(process.argv[3]));
else if (command === 'prepack') {
  restore();
  await build();
  const text = readFileSync(manifestPath, 'utf8');
  writeFileSync(savedPath, text);
  writeFileSync(manifestPath, `${JSON.stringify(publishedManifest(JSON.parse(text)), null, 2)}\n`);
} else if (command === 'postpack') restore();
else {
  process.stderr.write('usage: package-build.mjs build | stage DIR | prepack | postpack\n');
  process.exitCode = 2;
}
