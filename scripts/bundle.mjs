/**
 * The bundled build of a package's command (decision 0108): `@ojs/cli`'s
 * `ojs`, with the workspace packages and their npm dependencies, as a few
 * ES modules in dist/ instead of ~600 files resolved one by one at start.
 * Called by package-build.mjs for a manifest whose `ojsPack.bundle` is set:
 *
 *   "bundle": { "entries": ["src/main.ts"], "workers": ["../store-sqlite/src/store-thread.ts", ...] }
 *
 * Code splitting keeps what a command does not run out of its start: each
 * `import()` is a chunk of its own, loaded when called (the operator
 * commands never load the server; `serve` never loads the conformance
 * toolkit), and every module is evaluated once per thread, so a class is
 * the same class wherever it is used (`instanceof` holds across packages).
 *
 * Files found beside a module at run time (`new URL(..., import.meta.url)`:
 * migrations, Lua scripts, the dashboard, proto files, worker scripts) keep
 * their package layout under dist/ojs/<package>/: each workspace module's
 * `import.meta.url` becomes the URL it would have there
 * (dist/ojs/store-sqlite/src/migrate.js, whose ../sql/ is
 * dist/ojs/store-sqlite/sql/), the packages' published folders (`files`
 * but dist/) are copied there, and worker threads are entries written at
 * the path their `new Worker(new URL(...))` names. The bundling package's
 * own modules have the URL of their compiled file (src/main.ts is
 * dist/main.js, whose ../package.json is the package's).
 * `import.meta.resolve('@ojs/X/...')` resolves inside that tree too.
 *
 * Plain .mjs, like package-build.mjs.
 */
import { cpSync, existsSync, mkdirSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { dirname, join, relative, resolve, sep } from 'node:path';
import { fileURLToPath } from 'node:url';

const REPOSITORY = resolve(dirname(fileURLToPath(import.meta.url)), '..');
const PACKAGES = join(REPOSITORY, 'packages');
/** Replaced in each output file by the relative path from it to the bundle's root. */
const ROOT_PLACEHOLDER = '__OJS_BUNDLE_ROOT__';

/**
 * Node built-ins that npm dependencies require at load but use only on
 * paths a plain `ojs serve` does not take: fastify requires node:http2 and
 * node:https for servers it is not asked to make, ws requires TLS for
 * client connections, prom-client requires zlib and https for its
 * Pushgateway and cluster for its AggregatorRegistry. Together about 10 MB
 * of memory at start. In the bundle such a require gives a stand-in that
 * loads the module on first use (a property read), so a dependency that
 * does use it still gets the real one.
 */
const LAZY_BUILTINS = ['https', 'http2', 'tls', 'zlib', 'cluster', 'child_process', 'dgram'];
const LAZY_REQUIRE = new RegExp(
  `\\brequire\\((['"])(?:node:)?(${LAZY_BUILTINS.join('|')})\\1\\)`,
  'g',
);
const LAZY_HELPER = `function __ojsLazyBuiltin(name) {
  let real;
  const load = () => (real ??= require(name));
  return new Proxy({}, {
    get: (_, key) => load()[key],
    has: (_, key) => key in load(),
  });
}`;

/**
 * Package index files whose `exports.X = require(...)` lines become getters,
 * so a part loads when it is used: prom-client's index requires its
 * Pushgateway (zlib, https) and AggregatorRegistry (cluster) with the
 * metrics the server uses (about 4 MB at start).
 */
const LAZY_INDEXES = ['prom-client/index.js'];
const INDEX_EXPORT = /^exports\.(\w+) =\s*(require\([^)]*\)[^;]*);/gm;

/** [folder, ...path] of a workspace file under packages/, or undefined for any other file. */
function workspacePath(file) {
  const rel = relative(PACKAGES, file);
  if (rel.startsWith('..') || rel.split(sep).includes('node_modules')) return undefined;
  return rel.split(sep);
}

/** The folder of the npm package a file under node_modules belongs to. */
function packageRoot(file) {
  const parts = file.split(sep);
  const at = parts.lastIndexOf('node_modules');
  return parts.slice(0, at + (parts[at + 1].startsWith('@') ? 3 : 2)).join(sep);
}

/** The workspace folder of each package name (@ojs/store-sqlite -> store-sqlite). */
function workspaceFolders() {
  const folders = new Map();
  for (const folder of readdirSync(PACKAGES)) {
    const manifest = join(PACKAGES, folder, 'package.json');
    if (existsSync(manifest)) folders.set(JSON.parse(readFileSync(manifest, 'utf8')).name, folder);
  }
  return folders;
}

/**
 * Bundles `manifest.ojsPack.bundle` of the package in `dir` into `outDir`.
 * esbuild is the repository's bundler already (the dashboard's build).
 */
export async function bundle(dir, outDir, manifest) {
  const { build } = await import('esbuild');
  const spec = manifest.ojsPack.bundle;
  const self = workspacePath(resolve(dir, 'package.json'))[0];
  const folders = workspaceFolders();
  // The URL a module has in the tree: the bundling package's own src/X.ts is
  // dist/X.js (its ../package.json is the package's), any other dist/ojs/<folder>/...
  const inTree = (parts) => {
    const path =
      parts[0] === self
        ? parts
            .slice(1)
            .join('/')
            .replace(/^src\//, '')
        : `ojs/${parts.join('/')}`;
    return `new URL(${JSON.stringify(path.replace(/\.ts$/, '.js'))}, __ojsBundleRoot).href`;
  };
  const importMeta = {
    name: 'ojs-import-meta',
    setup(b) {
      b.onLoad({ filter: /\.(ts|js)$/ }, (args) => {
        const parts = workspacePath(args.path);
        if (parts === undefined) return undefined;
        const source = readFileSync(args.path, 'utf8');
        if (!source.includes('import.meta')) return undefined;
        const contents = source
          .replaceAll('import.meta.url', inTree(parts))
          .replace(/import\.meta\.resolve\(\s*'(@ojs\/[^/']+)\/([^']+)'\s*\)/g, (_, name, rest) => {
            const folder = folders.get(name);
            if (folder === undefined)
              throw new Error(`${args.path}: ${name} is not in this repository`);
            return inTree([folder, rest]);
          });
        return { contents, loader: args.path.endsWith('.ts') ? 'ts' : 'js' };
      });
    },
  };
  // Packages (their root folders) whose modules use __dirname or __filename.
  const located = new Set();
  const nodeModules = {
    name: 'ojs-node-modules',
    setup(b) {
      b.onLoad({ filter: /[\\/]node_modules[\\/].*\.(c?js)$/ }, (args) => {
        const source = readFileSync(args.path, 'utf8');
        let contents = source.replace(
          LAZY_REQUIRE,
          (_, _quote, name) => `__ojsLazyBuiltin('node:${name}')`,
        );
        if (LAZY_INDEXES.some((index) => args.path.endsWith(`${sep}node_modules${sep}${index}`))) {
          const lazy = contents.replace(
            INDEX_EXPORT,
            (_, name, value) =>
              `Object.defineProperty(exports, '${name}', { enumerable: true, get: () => ${value} });`,
          );
          // Its layout changed: the build stops rather than ship it eager.
          if (lazy === contents) throw new Error(`${args.path}: no exports.X = require(...) line`);
          contents = lazy;
        }
        // CommonJS modules that read files beside them (grpc-health-check's
        // .proto, ioredis's package.json): their __dirname is their folder in a
        // copy of their package under dist/deps/.
        if (/\b__(dirname|filename)\b/.test(source)) {
          located.add(packageRoot(args.path));
          const file = relative(REPOSITORY, args.path).split(sep).join('/');
          contents = `var __filename = ${JSON.stringify(`deps/${file}`)}, __dirname;
__filename = __ojsFileURLToPath(new URL(__filename, __ojsBundleRoot)); __dirname = __ojsDirname(__filename);
${contents}`;
        }
        if (contents === source) return undefined;
        return { contents, loader: 'js', resolveDir: dirname(args.path) };
      });
    },
  };
  // `import http from 'node:http'` in an ES module reads every export of the
  // built-in, and node:http's lazy ones load undici, TLS and HTTP/2 (about
  // 8 MB; node:https's load TLS). Imported as CommonJS (a require), their
  // exports are read when used. Only these two: the interop copy of a
  // CommonJS module's exports costs start-up time for every other one.
  const builtinsAsCommonJs = {
    name: 'ojs-builtins-as-commonjs',
    setup(b) {
      b.onResolve({ filter: /^(node:)?https?$/ }, (args) => {
        if (args.kind !== 'import-statement') return undefined;
        return { path: args.path, namespace: 'ojs-builtin' };
      });
      b.onLoad({ filter: /.*/, namespace: 'ojs-builtin' }, (args) => ({
        contents: `module.exports = require(${JSON.stringify(args.path)});`,
        loader: 'js',
      }));
    },
  };
  const entryPoints = [
    ...(spec.entries ?? []).map((file) => ({
      in: resolve(dir, file),
      out: file.replace(/^src\//, '').replace(/\.ts$/, ''),
    })),
    // Worker threads, at the path their `new Worker(new URL(...))` names in the tree.
    ...(spec.workers ?? []).map((file) => ({
      in: resolve(dir, file),
      out: `ojs/${workspacePath(resolve(dir, file))
        .join('/')
        .replace(/\.(ts|js)$/, '')}`,
    })),
  ];
  const result = await build({
    entryPoints,
    outdir: outDir,
    write: false,
    bundle: true,
    splitting: true,
    format: 'esm',
    platform: 'node',
    // The operator commands run on Node 18 (serve checks for Node >= 22.13 itself).
    target: 'node18',
    chunkNames: 'chunks/[name]-[hash]',
    // Optional modules the npm dependencies probe for inside try/catch (native add-ons).
    external: spec.external ?? [],
    banner: {
      js: [
        // The CommonJS dependencies (fastify, pino, ...) call require.
        "import { createRequire as __ojsCreateRequire } from 'node:module';",
        "import { dirname as __ojsDirname } from 'node:path';",
        "import { fileURLToPath as __ojsFileURLToPath } from 'node:url';",
        'const require = __ojsCreateRequire(import.meta.url);',
        `const __ojsBundleRoot = new URL('${ROOT_PLACEHOLDER}', import.meta.url);`,
        LAZY_HELPER,
      ].join('\n'),
    },
    plugins: [builtinsAsCommonJs, importMeta, nodeModules],
    metafile: true,
    // No comments and no indentation: V8 keeps each chunk's source in memory for as long
    // as the process runs (names are kept, so stack traces still name functions).
    minifyWhitespace: true,
    charset: 'ascii',
    legalComments: 'none',
    logLevel: 'warning',
  });
  for (const output of result.outputFiles) {
    const root = relative(dirname(output.path), outDir).split(sep).join('/');
    mkdirSync(dirname(output.path), { recursive: true });
    writeFileSync(
      output.path,
      output.text.replace(ROOT_PLACEHOLDER, root === '' ? './' : `${root}/`),
    );
  }
  if (process.env.OJS_BUNDLE_METAFILE) {
    writeFileSync(process.env.OJS_BUNDLE_METAFILE, JSON.stringify(result.metafile));
  }
  // The files dependencies read beside their modules: all but code and docs.
  for (const root of located) {
    cpSync(root, join(outDir, 'deps', relative(REPOSITORY, root)), {
      recursive: true,
      filter: (from) =>
        !/\.(c?js|mjs|ts|map|md)$/.test(from) &&
        !from.includes(`${sep}node_modules${sep}`, root.length),
    });
  }
  // The files modules read beside them at run time, in their packages' layout.
  for (const folder of folders.values()) {
    if (folder === self) continue;
    const pkg = JSON.parse(readFileSync(join(PACKAGES, folder, 'package.json'), 'utf8'));
    for (const file of pkg.files ?? []) {
      if (file === 'dist' || file === 'README.md') continue;
      const from = join(PACKAGES, folder, file);
      if (existsSync(from)) cpSync(from, join(outDir, 'ojs', folder, file), { recursive: true });
    }
  }
}
