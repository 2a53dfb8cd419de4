/**
 * Import cycles (`npm run lint` runs this; decision 0091).
 *
 *   node scripts/import-cycles.ts [ROOT]
 *
 * Reads every .ts/.tsx file under packages/<pkg>/src (and packages/dashboard/ui),
 * takes each static `import ... from` / `export ... from` / `import '...'`
 * specifier, type-only ones included, and each literal dynamic `import('...')`,
 * resolves relative paths and `@ojs/<pkg>[/entry]` (through the package's
 * `exports`), and finds the strongly connected components of the file graph
 * (Tarjan) and of the package graph (the same edges, file to package). Every
 * component of more than one node is a cycle: it is printed, and the exit
 * code is 1. There is no allow-list: a cycle is fixed, not excused.
 */
import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import { dirname, join, relative, resolve, sep } from 'node:path';

export type Graph = Map<string, Set<string>>;

const SOURCE = /\.tsx?$/;

/** The import specifiers of one source: static, type-only and literal dynamic ones. */
export function specifiers(source: string): string[] {
  // Comments that open a line (JSDoc, `//` notes) are not code; inline ones are left.
  const code = source.replace(/^[ \t]*\/\*[\s\S]*?\*\//gm, '').replace(/^[ \t]*\/\/.*$/gm, '');
  const found: string[] = [];
  const patterns = [
    // import x from '...', import type { X } from '...', export { x } from '...', export * from '...'
    /^[ \t]*(?:import|export)\b[^;'"`]*?\bfrom\s*['"]([^'"]+)['"]/gm,
    // import '...'
    /^[ \t]*import\s*['"]([^'"]+)['"]/gm,
    // import('...'), typeof import('...')
    /\bimport\s*\(\s*['"]([^'"]+)['"]\s*\)/g,
  ];
  for (const pattern of patterns) {
    for (const match of code.matchAll(pattern)) found.push(match[1]!);
  }
  return found;
}

function sourceFiles(dir: string): string[] {
  if (!existsSync(dir)) return [];
  return (readdirSync(dir, { recursive: true }) as string[])
    .filter((file) => SOURCE.test(file) && !file.endsWith('.d.ts'))
    .map((file) => join(dir, file))
    .filter((file) => !file.split(sep).includes('node_modules'))
    .sort();
}

interface Package {
  name: string;
  dir: string;
  exports: Record<string, string>;
}

function packagesOf(root: string): Package[] {
  const base = join(root, 'packages');
  if (!existsSync(base)) return [];
  const found: Package[] = [];
  for (const entry of readdirSync(base).sort()) {
    const manifest = join(base, entry, 'package.json');
    if (!existsSync(manifest)) continue;
    const parsed = JSON.parse(readFileSync(manifest, 'utf8')) as {
      name?: string;
      exports?: unknown;
    };
    const exports: Record<string, string> = {};
    if (typeof parsed.exports === 'string') exports['.'] = parsed.exports;
    else if (parsed.exports !== null && typeof parsed.exports === 'object') {
      for (const [key, value] of Object.entries(parsed.exports)) {
        if (typeof value === 'string') exports[key] = value;
      }
    }
    if (exports['.'] === undefined && existsSync(join(base, entry, 'src/index.ts'))) {
      exports['.'] = './src/index.ts';
    }
    found.push({ name: parsed.name ?? entry, dir: join(base, entry), exports });
  }
  return found;
}

function resolveFile(path: string): string | undefined {
  const candidates = [
    path,
    path.replace(/\.js$/, '.ts'),
    path.replace(/\.jsx$/, '.tsx'),
    `${path}.ts`,
    `${path}.tsx`,
    join(path, 'index.ts'),
  ];
  return candidates.find(
    (file) => SOURCE.test(file) && existsSync(file) && statSync(file).isFile(),
  );
}

/** The file graph under `root` (paths relative to it, `/`-separated). */
export function fileGraph(root: string): { graph: Graph; packageOf: Map<string, string> } {
  const packages = packagesOf(root);
  const files: string[] = [];
  const packageOf = new Map<string, string>();
  for (const pkg of packages) {
    for (const file of [
      ...sourceFiles(join(pkg.dir, 'src')),
      ...sourceFiles(join(pkg.dir, 'ui')),
    ]) {
      files.push(file);
      packageOf.set(file, pkg.name);
    }
  }
  const byName = new Map(packages.map((pkg) => [pkg.name, pkg]));
  const resolveSpecifier = (from: string, spec: string): string | undefined => {
    if (spec.startsWith('.')) return resolveFile(resolve(dirname(from), spec));
    const match = /^(@ojs\/[^/]+)(\/.*)?$/.exec(spec);
    const pkg = match === null ? undefined : byName.get(match[1]!);
    if (pkg === undefined) return undefined;
    const entry = pkg.exports[`.${match![2] ?? ''}`];
    return entry === undefined ? undefined : resolveFile(resolve(pkg.dir, entry));
  };
  const name = (file: string) => relative(root, file).split(sep).join('/');
  const graph: Graph = new Map();
  const named = new Map<string, string>();
  for (const file of files) {
    const edges = new Set<string>();
    for (const spec of specifiers(readFileSync(file, 'utf8'))) {
      const target = resolveSpecifier(file, spec);
      if (target !== undefined && packageOf.has(target)) edges.add(name(target));
    }
    graph.set(name(file), edges);
    named.set(name(file), packageOf.get(file)!);
  }
  return { graph, packageOf: named };
}

/** The package graph: an edge wherever a file of one package imports a file of another. */
export function packageGraph(graph: Graph, packageOf: Map<string, string>): Graph {
  const packages: Graph = new Map();
  for (const [file, edges] of graph) {
    const from = packageOf.get(file)!;
    const targets = packages.get(from) ?? new Set<string>();
    packages.set(from, targets);
    for (const edge of edges) {
      const to = packageOf.get(edge)!;
      if (to !== from) targets.add(to);
    }
  }
  return packages;
}

/** Tarjan's strongly connected components with more than one node (or a node importing itself). */
export function cycles(graph: Graph): string[][] {
  let counter = 0;
  const index = new Map<string, number>();
  const low = new Map<string, number>();
  const stack: string[] = [];
  const onStack = new Set<string>();
  const found: string[][] = [];
  const visit = (node: string): void => {
    index.set(node, counter);
    low.set(node, counter);
    counter += 1;
    stack.push(node);
    onStack.add(node);
    for (const next of graph.get(node) ?? []) {
      if (!index.has(next)) {
        visit(next);
        low.set(node, Math.min(low.get(node)!, low.get(next)!));
      } else if (onStack.has(next)) {
        low.set(node, Math.min(low.get(node)!, index.get(next)!));
      }
    }
    if (low.get(node) !== index.get(node)) return;
    const component: string[] = [];
    let member: string;
    do {
      member = stack.pop()!;
      onStack.delete(member);
      component.push(member);
    } while (member !== node);
    if (component.length > 1 || graph.get(node)?.has(node)) found.push(component.sort());
  };
  for (const node of [...graph.keys()].sort()) if (!index.has(node)) visit(node);
  return found.sort((a, b) => a[0]!.localeCompare(b[0]!));
}

/** One shortest loop through the component's first member, for the report. */
export function exampleLoop(graph: Graph, component: string[]): string[] {
  const members = new Set(component);
  const start = component[0]!;
  const previous = new Map<string, string>();
  const queue = [start];
  while (queue.length > 0) {
    const node = queue.shift()!;
    for (const next of graph.get(node) ?? []) {
      if (!members.has(next)) continue;
      if (next === start) {
        const path = [node];
        while (path[0] !== start) path.unshift(previous.get(path[0]!)!);
        return [...path, start];
      }
      if (!previous.has(next)) {
        previous.set(next, node);
        queue.push(next);
      }
    }
  }
  return [start];
}

export interface Report {
  lines: string[];
  failed: boolean;
}

/** Checks `root`: every file and package cycle. */
export function check(root: string): Report {
  const { graph, packageOf } = fileGraph(root);
  const packages = packageGraph(graph, packageOf);
  const found = [
    ...cycles(graph).map((component) => ({ kind: 'file', component, graph })),
    ...cycles(packages).map((component) => ({ kind: 'package', component, graph: packages })),
  ];
  const lines: string[] = [];
  for (const { kind, component, graph: g } of found) {
    lines.push(
      `${kind} cycle (${component.length}): ${exampleLoop(g, component).join(' -> ')}`,
      ...component.map((member) => `  ${member}`),
    );
  }
  if (found.length === 0) lines.push(`no import cycles (${graph.size} files)`);
  return { lines, failed: found.length > 0 };
}

if (import.meta.main) {
  const root = resolve(process.argv[2] ?? join(import.meta.dirname, '..'));
  const report = check(root);
  const print = report.failed ? console.error : console.log;
  for (const line of report.lines) print(line);
  process.exitCode = report.failed ? 1 : 0;
}
