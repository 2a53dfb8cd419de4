/** Shared assertion of the core tests: `fn` throws an OjsError, which is returned. */
import assert from 'node:assert/strict';
import { OjsError } from '../src/errors.ts';

export function rejects(fn: () => unknown): OjsError {
  try {
    fn();
  } catch (error) {
    assert.ok(error instanceof OjsError, `expected OjsError, got ${String(error)}`);
    return error;
  }
  assert.fail('expected an OjsError');
}
