/**
 * Builds the dashboard into public/: one minified ES module and one CSS file,
 * both named by content hash (cached for good by the server), and an
 * index.html that loads them. Run by `npm ci` (this package's `prepare`)
 * and by `npm run build -w @ojs/dashboard`.
 */
import { mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { basename, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { gzipSync } from 'node:zlib';
import { build } from 'esbuild';

const root = fileURLToPath(new URL('..', import.meta.url));
// public/, not dist/: dist/ is the compiled src/index.ts of the published package.
const dist = join(root, 'public');

rmSync(dist, { recursive: true, force: true });
mkdirSync(dist, { recursive: true });
const result = await build({
  entryPoints: { app: join(root, 'ui/main.tsx') },
  bundle: true,
  minify: true,
  format: 'esm',
  target: ['es2022', 'chrome100', 'firefox100', 'safari15'],
  outdir: dist,
  entryNames: '[name]-[hash]',
  metafile: true,
  jsx: 'automatic',
  jsxImportSource: 'preact',
  legalComments: 'none',
  logLevel: 'warning',
});

const outputs = Object.keys(result.metafile.outputs).map((file) => basename(file));
const script = outputs.find((f) => f.endsWith('.js'));
const style = outputs.find((f) => f.endsWith('.css'));
if (script === undefined || style === undefined) throw new Error('esbuild produced no JS or CSS');
const favicon =
  'data:image/svg+xml,' +
  encodeURIComponent(
    '<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 16 16"><rect width="16" height="16" rx="3" fill="#2f6fdf"/><path d="M4 8h8M8 4v8" stroke="#fff" stroke-width="2"/></svg>',
  );
writeFileSync(
  join(dist, 'index.html'),
  `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<meta name="color-scheme" content="light dark">
<title>OJS dashboard</title>
<link rel="icon" href="${favicon}">
<link rel="stylesheet" href="${style}">
<script type="module" src="${script}"></script>
</head>
<body>
<div id="app"><p class="boot">Loading the OJS dashboard…</p></div>
<noscript>The OJS dashboard needs JavaScript.</noscript>
</body>
</html>
`,
);
const sizes = [script, style].map((file) => {
  const bytes = readFileSync(join(dist, file));
  return `${file} ${(bytes.length / 1024).toFixed(1)} KiB (${(gzipSync(bytes).length / 1024).toFixed(1)} KiB gzip)`;
});
process.stdout.write(`dashboard built: ${sizes.join(', ')}\n`);
