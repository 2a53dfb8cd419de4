import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { it } from 'node:test';
import { fileURLToPath } from 'node:url';

const QUICKSTART = fileURLToPath(new URL('../../../examples/quickstart.ts', import.meta.url));

it('examples/quickstart.ts prints exactly `completed 100/100` and exits 0', async () => {
  const { stdout, code } = await new Promise<{ stdout: string; code: number | null }>((resolve) => {
    const child = execFile(process.execPath, [QUICKSTART], { timeout: 60_000 }, (error, out) =>
      resolve({ stdout: out, code: error ? ((error as { code?: number }).code ?? 1) : 0 }),
    );
    child.stdin?.end();
  });
  assert.equal(code, 0);
  assert.equal(stdout, 'completed 100/100\n');
});
