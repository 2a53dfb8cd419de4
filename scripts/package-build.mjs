#!/usr/bin/env node
/**
 * Build and pack a workspace package for npm (see docs/decisions/0060).
 *
 *   node ../../scripts/package-build.mjs build     dist/: ESM .js + .d.ts, dist/cjs/: CommonJS
 *   node ../../scripts/package-build.mjs prepack   build, then point the manifest at dist/
 *   node ../../scripts/package-build.mjs postpack  restore the manifest
 *
 * Inside the repository the packages' `exports` name their TypeScript
 * sources (Node 24 runs them directly). Node refuses to strip types under
 * node_modules, so the published manifest must name the built JavaScript:
 * prepack rewrites each `./src/X.ts` export to
 * `{types, import: ./dist/X.js, require: ./dist/cjs/X.js}` (and `bin` to
 * dist/), keeping the original in `package.json.orig` that postpack puts
 * back (a prepack that finds one left by a failed pack restores it first).
 * Entries listed in the manifest's `ojsPack.omit` are not published.
 * Plain .mjs, so it runs on any Node the npm lifecycle finds.
 */
import { execFileSync } from 'node:child_process';
import { existsSync, readFileSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';

const dir = process.cwd();
const manifestPath = join(dir, 'package.json');
const savedPath = join(dir, 'package.json.orig');
const tsc = join(
  dirname(createRequire(import.meta.url).resolve('typescript/package.json')),
  'bin/tsc',
);

function build() {
  rmSync(join(dir, 'dist'), { recursive: true, force: true });
  execFileSync(process.execPath, [tsc, '-p', 'tsconfig.build.json'], {
    cwd: dir,
    stdio: 'inherit',
  });
  // The same sources as CommonJS: a second emit into dist/cjs, marked as
  // CommonJS by its own package.json so the .js files load with require().
  execFileSync(
    process.execPath,
    [
      tsc,
      '-p',
      'tsconfig.build.json',
      '--outDir',
      'dist/cjs',
      '--module',
      'commonjs',
      '--moduleResolution',
      'bundler',
      '--verbatimModuleSyntax',
      'false',
    ],
    { cwd: dir, stdio: 'inherit' },
  );
  writeFileSync(join(dir, 'dist/cjs/package.json'), '{ "type": "commonjs" }\n');
}

const toDist = (source, ext) => source.replace(/^\.\/src\//, './dist/').replace(/\.ts$/, ext);

/** The manifest as published: exports and bin on dist/, no workspace-only fields. */
export function publishedManifest(manifest) {
  const omit = new Set(manifest.ojsPack?.omit ?? []);
  const exports = {};
  for (const [entry, source] of Object.entries(manifest.exports ?? {})) {
    if (omit.has(entry)) continue;
    if (typeof source !== 'string' || !source.startsWith('./src/')) {
      exports[entry] = source;
      continue;
    }
    exports[entry] = {
      import: { types: toDist(source, '.d.ts'), default: toDist(source, '.js') },
      require: {
        types: toDist(source, '.d.ts').replace('./dist/', './dist/cjs/'),
        default: toDist(source, '.js').replace('./dist/', './dist/cjs/'),
      },
    };
  }
  const out = { ...manifest, exports };
  delete out.ojsPack;
  delete out.devDependencies;
  // The build and pack scripts need this repository; an installed package has nothing to run.
  delete out.scripts;
  if (exports['.'] !== undefined) {
    out.main = './dist/cjs/index.js';
    out.module = './dist/index.js';
    out.types = './dist/index.d.ts';
  }
  if (typeof manifest.bin === 'object') {
    out.bin = Object.fromEntries(
      Object.entries(manifest.bin).map(([name, path]) => [name, toDist(path, '.js')]),
    );
  }
  return out;
}

function restore() {
  if (existsSync(savedPath)) renameSync(savedPath, manifestPath);
}

const command = process.argv[2];
if (command === 'build') build();
else if (command === 'prepack') {
  restore();
  build();
  const text = readFileSync(manifestPath, 'utf8');
  writeFileSync(savedPath, text);
  writeFileSync(manifestPath, `${JSON.stringify(publishedManifest(JSON.parse(text)), null, 2)}\n`);
} else if (command === 'postpack') restore();
else {
  process.stderr.write('usage: package-build.mjs build | prepack | postpack\n');
  process.exitCode = 2;
}
