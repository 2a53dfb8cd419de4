/**
 * The SDK's copies of core modules (decision 0093).
 *
 *   node scripts/generate-sdk.ts           write packages/sdk/src/generated/*.ts
 *   node scripts/generate-sdk.ts --check   exit 1 if a generated file is missing or stale
 *
 * The SDK has no runtime dependencies, so it cannot import @ojs/core; the
 * few modules both need (the OJS-xxxx error catalogue, UUIDv7 ids, the
 * media type, isObject, the webhook signature check) are written once in core and copied here, with a
 * header, into files that are committed. A copied module may import only
 * Node built-ins (`node:*`): the copy must stand alone. `npm run lint`
 * runs the check; the SDK's `npm run build` regenerates first.
 */
import { existsSync, mkdirSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';

/** The core modules the SDK gets, by file name (core/src/X -> sdk/src/generated/X). */
export const SHARED_MODULES = [
  'canonical-json.ts',
  'error-codes.ts',
  'is-object.ts',
  'media-type.ts',
  'uuid.ts',
  'webhook-signature.ts',
];

const CORE = 'packages/core/src';
export const GENERATED = 'packages/sdk/src/generated';

/** The generated files under `root`, by path relative to it. */
export function generate(root: string): Map<string, string> {
  const files = new Map<string, string>();
  for (const name of SHARED_MODULES) {
    const source = readFileSync(join(root, CORE, name), 'utf8');
    for (const match of source.matchAll(
      /^(?:import|export)\b[^;'"]*?\bfrom\s*['"]([^'"]+)['"]/gm,
    )) {
      if (!match[1]!.startsWith('node:')) {
        throw new Error(
          `${CORE}/${name} imports '${match[1]}': a module the SDK copies imports only node:*`,
        );
      }
    }
    const header =
      `// Generated from @ojs/core (${CORE}/${name}) by scripts/generate-sdk.ts; do not edit.\n` +
      '// Change the core module and run `node scripts/generate-sdk.ts`.\n\n';
    files.set(`${GENERATED}/${name}`, header + source);
  }
  return files;
}

/** The paths that differ from what `generate` writes: missing, stale, or not generated at all. */
export function staleFiles(root: string): string[] {
  const expected = generate(root);
  const stale = [...expected]
    .filter(([path, content]) => {
      const file = join(root, path);
      return !existsSync(file) || readFileSync(file, 'utf8') !== content;
    })
    .map(([path]) => path);
  const dir = join(root, GENERATED);
  const extra = existsSync(dir)
    ? readdirSync(dir)
        .map((name) => `${GENERATED}/${name}`)
        .filter((path) => !expected.has(path))
    : [];
  return [...stale, ...extra];
}

if (import.meta.main) {
  const root = join(import.meta.dirname, '..');
  if (process.argv.includes('--check')) {
    const stale = staleFiles(root);
    for (const path of stale) {
      console.error(`${path} is not what scripts/generate-sdk.ts writes: run it and commit`);
    }
    process.exitCode = stale.length > 0 ? 1 : 0;
  } else {
    mkdirSync(join(root, GENERATED), { recursive: true });
    for (const name of readdirSync(join(root, GENERATED))) {
      if (!SHARED_MODULES.includes(name)) rmSync(join(root, GENERATED, name));
    }
    for (const [path, content] of generate(root)) writeFileSync(join(root, path), content);
  }
}
