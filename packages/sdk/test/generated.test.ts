/**
 * The SDK's copies of core modules (src/generated/, scripts/generate-sdk.ts) are
 * what the generator writes from core as it is now.
 */
import assert from 'node:assert/strict';
import { cpSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';
import { GENERATED, generate, staleFiles } from '../../../scripts/generate-sdk.ts';
import { ROOT } from '../../../scripts/lib.ts';

test('src/generated is up to date with core (run node scripts/generate-sdk.ts)', () => {
  assert.deepEqual(staleFiles(ROOT), []);
});

test('a changed core module or a hand-edited copy is reported stale', () => {
  const root = mkdtempSync(join(tmpdir(), 'ojs-generated-'));
  try {
    cpSync(join(ROOT, 'packages/core/src'), join(root, 'packages/core/src'), { recursive: true });
    cpSync(join(ROOT, GENERATED), join(root, GENERATED), { recursive: true });
    assert.deepEqual(staleFiles(root), []);
    writeFileSync(
      join(root, 'packages/core/src/media-type.ts'),
      "export const OJS_MEDIA_TYPE = 'x';\n",
    );
    writeFileSync(join(root, GENERATED, 'extra.ts'), '');
    assert.deepEqual(staleFiles(root), [`${GENERATED}/media-type.ts`, `${GENERATED}/extra.ts`]);
    for (const [path, content] of generate(root)) writeFileSync(join(root, path), content);
    rmSync(join(root, GENERATED, 'extra.ts'));
    assert.deepEqual(staleFiles(root), []);
  } finally {
    rmSync(root, { recursive: true, force: true });
  }
});

test('a core module the SDK copies may import only node built-ins', () => {
  const root = mkdtempSync(join(tmpdir(), 'ojs-generated-'));
  try {
    cpSync(join(ROOT, 'packages/core/src'), join(root, 'packages/core/src'), { recursive: true });
    writeFileSync(
      join(root, 'packages/core/src/is-object.ts'),
      "import { x } from './errors.ts';\nexport const isObject = x;\n",
    );
    assert.throws(() => generate(root), /imports '\.\/errors\.ts'/);
  } finally {
    rmSync(root, { recursive: true, force: true });
  }
});
