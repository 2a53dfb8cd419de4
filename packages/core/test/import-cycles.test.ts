/**
 * scripts/import-cycles.ts on small trees written to a temp dir (the repository's own
 * graph is checked by `npm run lint`).
 */
import assert from 'node:assert/strict';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { after, test } from 'node:test';
import { check, specifiers } from '../../../scripts/import-cycles.ts';

const roots: string[] = [];
after(() => {
  for (const root of roots) rmSync(root, { recursive: true, force: true });
});

function tree(files: Record<string, string>): string {
  const root = mkdtempSync(join(tmpdir(), 'ojs-cycles-'));
  roots.push(root);
  for (const [name, content] of Object.entries(files)) {
    mkdirSync(dirname(join(root, name)), { recursive: true });
    writeFileSync(join(root, name), content);
  }
  return root;
}

const manifest = (name: string) => JSON.stringify({ name, exports: { '.': './src/index.ts' } });

test('specifiers: static, type-only, re-exports, side effects and literal dynamic imports', () => {
  const source = [
    "import { a } from './a.ts';",
    "import type {\n  B,\n  C,\n} from './b.ts';",
    "export * from './c.ts';",
    "export type { D } from './d.ts';",
    "import './e.ts';",
    "const f = await import('./f.ts');",
    "type G = typeof import('./g.ts');",
    '/**\n * import { x } from "./comment.ts";\n */',
    "// import './line-comment.ts';",
    'const h = await import(name);',
  ].join('\n');
  assert.deepEqual(specifiers(source).sort(), [
    './a.ts',
    './b.ts',
    './c.ts',
    './d.ts',
    './e.ts',
    './f.ts',
    './g.ts',
  ]);
});

test('a tree without cycles passes', () => {
  const root = tree({
    'packages/a/package.json': manifest('@ojs/a'),
    'packages/a/src/index.ts': "export * from './x.ts';\nexport type { Y } from './y.ts';\n",
    'packages/a/src/x.ts': "import type { Y } from './y.ts';\nexport const x = (y: Y) => y;\n",
    'packages/a/src/y.ts': 'export type Y = number;\n',
    'packages/b/package.json': manifest('@ojs/b'),
    'packages/b/src/index.ts': "import { x } from '@ojs/a';\nexport const b = x;\n",
  });
  const report = check(root);
  assert.equal(report.failed, false, report.lines.join('\n'));
  assert.deepEqual(report.lines, ['no import cycles (4 files)']);
});

test('a type-only loop inside a package and a loop between packages fail', () => {
  const root = tree({
    'packages/a/package.json': manifest('@ojs/a'),
    'packages/a/src/index.ts': "export * from './x.ts';\nimport '@ojs/b';\n",
    'packages/a/src/x.ts': "import type { Y } from './y.ts';\nexport type X = Y;\n",
    'packages/a/src/y.ts': "import type { X } from './x.ts';\nexport type Y = X[];\n",
    'packages/b/package.json': manifest('@ojs/b'),
    'packages/b/src/index.ts': "export const b = () => import('@ojs/a');\n",
  });
  const report = check(root);
  assert.equal(report.failed, true);
  const text = report.lines.join('\n');
  assert.match(
    text,
    /file cycle \(2\): packages\/a\/src\/x\.ts -> packages\/a\/src\/y\.ts -> packages\/a\/src\/x\.ts/,
  );
  assert.match(
    text,
    /file cycle \(2\): packages\/a\/src\/index\.ts -> packages\/b\/src\/index\.ts/,
  );
  assert.match(text, /package cycle \(2\): @ojs\/a -> @ojs\/b -> @ojs\/a/);
});
