import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { formatTraceParent, parseTraceParent } from '../src/trace-context.ts';

describe('W3C traceparent in job meta', () => {
  const value = '00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01';

  it('parses and formats a valid traceparent unchanged', () => {
    const parsed = parseTraceParent(value);
    assert.deepEqual(parsed, {
      traceId: '4bf92f3577b34da6a3ce929d0e0e4736',
      spanId: '00f067aa0ba902b7',
      flags: 1,
    });
    assert.equal(formatTraceParent(parsed!), value);
    assert.equal(formatTraceParent({ ...parsed!, flags: 0 }), value.replace(/01$/, '00'));
  });

  it('refuses anything else: other versions, zero ids, uppercase, wrong lengths, non-strings', () => {
    for (const bad of [
      value.replace(/^00/, '01'),
      `00-${'0'.repeat(32)}-00f067aa0ba902b7-01`,
      `00-4bf92f3577b34da6a3ce929d0e0e4736-${'0'.repeat(16)}-01`,
      value.toUpperCase(),
      value.slice(0, -1),
      `${value}-extra`,
      42,
      undefined,
    ]) {
      assert.equal(parseTraceParent(bad), undefined, String(bad));
    }
  });
});
