import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { type EnqueueDefaults, MAX_META_BYTES, parseEnqueueRequest } from '../src/envelope.ts';
import { type ErrorCode, OjsError } from '../src/errors.ts';
import type { JobRecord } from '../src/job-types.ts';
import { DEFAULT_RETRY_POLICY } from '../src/retry.ts';
import { toIso } from '../src/time.ts';
import { computeUniqueKey } from '../src/unique.ts';
import { isUuidv7 } from '../src/uuid.ts';

const NOW = Date.UTC(2026, 0, 1, 12, 0, 0);
const DEFAULTS: EnqueueDefaults = { visibilityTimeoutMs: 300_000 };
const V7 = '01900000-0000-7000-8000-000000000abc';

type Obj = Record<string, unknown>;

function parse(body: unknown): JobRecord {
  return parseEnqueueRequest(body, NOW, DEFAULTS);
}

/** A valid envelope with `options` merged in. */
function withOptions(options: Obj, extra: Obj = {}): Obj {
  return { type: 'email.send', args: [], options, ...extra };
}

function rejects(body: unknown, code: ErrorCode, status: number, field?: string): OjsError {
  let caught: OjsError | undefined;
  assert.throws(
    () => parse(body),
    (error: unknown) => {
      assert.ok(error instanceof OjsError, `expected an OjsError, got ${String(error)}`);
      assert.equal(error.code, code, error.message);
      assert.equal(error.status, status);
      assert.equal(error.retryable, false);
      assert.ok(error.message.length > 0);
      if (field !== undefined) assert.equal(error.details?.field, field);
      caught = error;
      return true;
    },
  );
  return caught!;
}

const invalidPayload = (body: unknown, field?: string) =>
  rejects(body, 'invalid_payload', 400, field);
const invalidRequest = (body: unknown, field?: string) =>
  rejects(body, 'invalid_request', 400, field);

describe('parseEnqueueRequest: defaults of a minimal envelope', () => {
  it('builds an available job with server-assigned fields', () => {
    const job = parse({ type: 'email.send', args: ['a@example.com', { n: 1 }] });
    assert.ok(isUuidv7(job.id));
    assert.equal(job.type, 'email.send');
    assert.equal(job.queue, 'default');
    assert.deepEqual(job.args, ['a@example.com', { n: 1 }]);
    assert.deepEqual(job.meta, {});
    assert.equal(job.state, 'available');
    assert.equal(job.priority, 0);
    assert.equal(job.attempt, 0);
    assert.deepEqual(job.retry, DEFAULT_RETRY_POLICY);
    assert.equal(job.visibility_timeout_ms, 300_000);
    assert.equal(job.timeout_ms, undefined);
    assert.equal(job.created_at, toIso(NOW));
    assert.equal(job.enqueued_at, toIso(NOW));
    assert.deepEqual(job.errors, []);
    assert.deepEqual(job.extensions, {});
    assert.equal(job.rev, 0);
    for (const absent of [
      'started_at',
      'completed_at',
      'error',
      'result',
      'scheduled_at',
      'expires_at',
      'unique',
      'unique_key',
      'run_at',
      'tags',
    ] as const) {
      assert.equal(job[absent], undefined, absent);
    }
  });

  it('generates distinct ids', () => {
    assert.notEqual(parse({ type: 'a', args: [] }).id, parse({ type: 'a', args: [] }).id);
  });

  for (const body of [null, undefined, [], 'x', 42, true]) {
    it(`rejects a non-object body ${JSON.stringify(body)} as invalid_payload`, () => {
      invalidPayload(body);
    });
  }
});

describe('type', () => {
  for (const type of [
    'email.send',
    'retry.test.constant-backoff',
    'a_b.c-d',
    'a',
    'x1.y2_z-3',
    'a'.repeat(255),
  ]) {
    it(`accepts ${JSON.stringify(type.length > 40 ? `${type.slice(0, 8)}...(${type.length})` : type)}`, () => {
      assert.equal(parse({ type, args: [] }).type, type);
    });
  }

  for (const type of [
    'Email.Send',
    'email send',
    '1email.send',
    '',
    'email@send!',
    'email..send',
    'email.',
    '.email',
    'email.1send',
    '-email',
    'émail',
    'a'.repeat(256),
  ]) {
    it(`rejects ${JSON.stringify(type.length > 40 ? `a...(${type.length} bytes)` : type)} with 400 invalid_payload`, () => {
      invalidPayload({ type, args: [] }, 'type');
    });
  }

  for (const type of [undefined, null, 42, ['email.send'], { name: 'x' }]) {
    it(`rejects type ${JSON.stringify(type)} (missing or not a string) with 400`, () => {
      const body: Obj = { args: [] };
      if (type !== undefined) body.type = type;
      invalidPayload(body, 'type');
    });
  }
});

describe('queue', () => {
  for (const queue of ['default', 'email', 'my-queue', 'q.1', '0queue', 'a'.repeat(255)]) {
    it(`accepts ${JSON.stringify(queue.slice(0, 20))}`, () => {
      assert.equal(parse(withOptions({ queue })).queue, queue);
    });
  }

  it('accepts a top-level queue (JF envelope)', () => {
    assert.equal(parse({ type: 'a', args: [], queue: 'top' }).queue, 'top');
  });

  it('options.queue wins over a top-level queue', () => {
    assert.equal(
      parse({ type: 'a', args: [], queue: 'top', options: { queue: 'opt' } }).queue,
      'opt',
    );
  });

  for (const queue of [
    'Default',
    'my_queue!',
    '-invalid',
    'my queue',
    '',
    '.dot',
    '_ojs_internal',
    'a'.repeat(256),
    5,
    ['default'],
  ]) {
    it(`rejects ${JSON.stringify(typeof queue === 'string' && queue.length > 40 ? `a...(${queue.length})` : queue)} with 400 invalid_payload`, () => {
      invalidPayload(withOptions({ queue }), 'options.queue');
    });
  }
});

describe('id', () => {
  it('keeps a lowercase client UUIDv7', () => {
    assert.equal(parse({ id: V7, type: 'a', args: [] }).id, V7);
  });

  it('treats an explicit null like an absent id', () => {
    assert.ok(isUuidv7(parse({ id: null, type: 'a', args: [] }).id));
  });

  for (const id of [
    '550e8400-e29b-41d4-a716-446655440000',
    V7.toUpperCase(),
    '',
    'not-a-uuid',
    '01900000-0000-7000-c000-000000000abc',
    42,
  ]) {
    it(`rejects ${JSON.stringify(id)} with 400 invalid_payload`, () => {
      invalidPayload({ id, type: 'a', args: [] }, 'id');
    });
  }
});

describe('args', () => {
  it('accepts [] and keeps JSON-native values verbatim', () => {
    assert.deepEqual(parse({ type: 'a', args: [] }).args, []);
    const args = ['s', 1, 1.5, -0.25, true, false, null, [1, [2]], { k: { n: [null] } }];
    assert.deepEqual(parse({ type: 'a', args }).args, args);
  });

  it('rejects missing args', () => {
    invalidPayload({ type: 'a' }, 'args');
  });

  for (const args of [{}, { a: 1 }, 'string', 42, true, false, null]) {
    it(`rejects args ${JSON.stringify(args)} with 400 invalid_payload`, () => {
      invalidPayload({ type: 'a', args }, 'args');
    });
  }
});

describe('meta', () => {
  it('is preserved unchanged, nested arrays included', () => {
    const meta = { trace_id: 't', nested: { list: [1, { x: [true] }] }, empty: {} };
    assert.deepEqual(parse({ type: 'a', args: [], meta }).meta, meta);
  });

  it('null meta is treated as absent', () => {
    assert.deepEqual(parse({ type: 'a', args: [], meta: null }).meta, {});
  });

  for (const meta of ['x', 1, true, [], [{ a: 1 }]]) {
    it(`rejects non-object meta ${JSON.stringify(meta)} with 400 invalid_payload`, () => {
      invalidPayload({ type: 'a', args: [], meta }, 'meta');
    });
  }

  it('accepts meta of exactly 64 KiB serialised', () => {
    const filler = 'x'.repeat(MAX_META_BYTES - JSON.stringify({ k: '' }).length);
    const meta = { k: filler };
    assert.equal(Buffer.byteLength(JSON.stringify(meta)), MAX_META_BYTES);
    assert.deepEqual(parse({ type: 'a', args: [], meta }).meta, meta);
  });

  it('rejects meta above 64 KiB with 413 metadata_too_large and sizes in details', () => {
    const filler = 'x'.repeat(MAX_META_BYTES - JSON.stringify({ k: '' }).length + 1);
    const error = rejects(
      { type: 'a', args: [], meta: { k: filler } },
      'metadata_too_large',
      413,
      'meta',
    );
    assert.equal(error.details?.max_bytes, MAX_META_BYTES);
    assert.equal(error.details?.actual_bytes, MAX_META_BYTES + 1);
  });

  it('counts bytes, not characters (multi-byte UTF-8)', () => {
    const filler = 'é'.repeat(MAX_META_BYTES / 2);
    rejects({ type: 'a', args: [], meta: { k: filler } }, 'metadata_too_large', 413);
  });

  it('options.metadata is merged into meta (metadata wins on a clash)', () => {
    const job = parse(
      withOptions({ metadata: { b: 2, test_directive: 'quiet' } }, { meta: { a: 1, b: 1 } }),
    );
    assert.deepEqual(job.meta, { a: 1, b: 2, test_directive: 'quiet' });
  });

  it('options.metadata alone becomes meta', () => {
    assert.deepEqual(parse(withOptions({ metadata: { test_directive: 'terminate' } })).meta, {
      test_directive: 'terminate',
    });
  });

  it('rejects non-object options.metadata', () => {
    invalidPayload(withOptions({ metadata: 'quiet' }), 'options.metadata');
    invalidPayload(withOptions({ metadata: [] }), 'options.metadata');
  });

  it('the 64 KiB limit applies to meta and options.metadata together', () => {
    const half = 'x'.repeat(MAX_META_BYTES / 2);
    rejects(
      withOptions({ metadata: { b: half } }, { meta: { a: half } }),
      'metadata_too_large',
      413,
    );
  });
});

describe('priority', () => {
  for (const priority of [-100, -10, 0, 1, 10, 100]) {
    it(`accepts ${priority}`, () => {
      assert.equal(parse(withOptions({ priority })).priority, priority);
    });
  }

  for (const priority of [101, -101, 999999, -999999, 1.5, '5', true, [1], {}]) {
    it(`rejects ${JSON.stringify(priority)} with 400 invalid_payload`, () => {
      invalidPayload(withOptions({ priority }), 'options.priority');
    });
  }

  for (const [name, value] of [
    ['high', 10],
    ['HIGH', 10],
    ['normal', 0],
    ['low', -10],
    ['critical', 100],
  ] as const) {
    it(`maps the named priority '${name}' to ${value}`, () => {
      assert.equal(parse(withOptions({ priority: name })).priority, value);
    });
  }

  it('rejects an unknown name', () => {
    invalidPayload(withOptions({ priority: 'urgent' }), 'options.priority');
  });

  it('accepts a top-level priority; null means the default', () => {
    assert.equal(parse({ type: 'a', args: [], priority: 7 }).priority, 7);
    assert.equal(parse(withOptions({ priority: null })).priority, 0);
  });
});

describe('retry policy', () => {
  it('merges a partial policy over the defaults', () => {
    const job = parse(
      withOptions({
        retry: { max_attempts: 5, initial_interval: 'PT2S', on_exhaustion: 'dead_letter' },
      }),
    );
    assert.deepEqual(job.retry, {
      ...DEFAULT_RETRY_POLICY,
      max_attempts: 5,
      initial_interval: 'PT2S',
      on_exhaustion: 'dead_letter',
    });
  });

  it('accepts options.retry_policy and a top-level retry', () => {
    assert.equal(parse(withOptions({ retry_policy: { max_attempts: 9 } })).retry.max_attempts, 9);
    assert.equal(parse({ type: 'a', args: [], retry: { max_attempts: 8 } }).retry.max_attempts, 8);
  });

  for (const [retry, fieldWord] of [
    [{ max_attempts: -1 }, 'max_attempts'],
    [{ max_attempts: 1.5 }, 'max_attempts'],
    [{ backoff_coefficient: 0.5 }, 'backoff_coefficient'],
    [{ initial_interval: 'soon' }, 'initial_interval'],
    [{ initial_interval: 'PT0S' }, 'initial_interval'],
    [{ initial_interval: 'PT10S', max_interval: 'PT1S' }, 'max_interval'],
    [{ jitter: 'yes' }, 'jitter'],
    [{ on_exhaustion: 'explode' }, 'on_exhaustion'],
    [{ backoff_strategy: 'random' }, 'backoff_strategy'],
    [{ non_retryable_errors: 'FatalError' }, 'non_retryable_errors'],
    ['PT1S', 'retry'],
  ] as const) {
    it(`rejects ${JSON.stringify(retry)} with 422 validation_error naming ${fieldWord}`, () => {
      const error = rejects(withOptions({ retry }), 'validation_error', 422);
      assert.ok(error.message.includes(fieldWord), error.message);
      assert.equal(error.toBody('r').error.type, 'validation_error');
    });
  }
});

describe('timestamps', () => {
  const future = '2026-01-01T12:00:05Z';
  const past = '2026-01-01T11:59:00Z';

  it('an absolute future scheduled_at makes the job scheduled, text kept verbatim', () => {
    const job = parse(withOptions({ scheduled_at: future }));
    assert.equal(job.state, 'scheduled');
    assert.equal(job.scheduled_at, future);
    assert.equal(job.run_at, NOW + 5000);
  });

  it('a past scheduled_at is immediate: available, no run_at', () => {
    const job = parse(withOptions({ scheduled_at: past }));
    assert.equal(job.state, 'available');
    assert.equal(job.scheduled_at, past);
    assert.equal(job.run_at, undefined);
  });

  it('scheduled_at equal to now is immediate', () => {
    assert.equal(parse(withOptions({ scheduled_at: toIso(NOW) })).state, 'available');
  });

  it("a relative '+PT2S' schedules 2 s from now", () => {
    const job = parse(withOptions({ scheduled_at: '+PT2S' }));
    assert.equal(job.state, 'scheduled');
    assert.equal(job.run_at, NOW + 2000);
    assert.equal(job.scheduled_at, toIso(NOW + 2000));
  });

  it('accepts delay_until (HB, suite) and a top-level scheduled_at (JF) as aliases', () => {
    const a = parse(withOptions({ delay_until: '+PT5S' }));
    assert.equal(a.state, 'scheduled');
    assert.equal(a.scheduled_at, toIso(NOW + 5000));
    const b = parse({ type: 'a', args: [], scheduled_at: future });
    assert.equal(b.state, 'scheduled');
    assert.equal(b.scheduled_at, future);
  });

  it('keeps a non-UTC offset verbatim and schedules at the right instant', () => {
    const job = parse(withOptions({ scheduled_at: '2026-01-01T14:00:05+02:00' }));
    assert.equal(job.scheduled_at, '2026-01-01T14:00:05+02:00');
    assert.equal(job.run_at, NOW + 5000);
  });

  for (const value of [
    '2026-01-01T12:00:05',
    '2026-01-01 12:00:05Z',
    '2026-01-01',
    'tomorrow',
    '+5S',
    '+PT',
    '',
    1767268805000,
  ]) {
    it(`rejects scheduled_at ${JSON.stringify(value)} with 400 invalid_payload`, () => {
      invalidPayload(withOptions({ scheduled_at: value }), 'options.scheduled_at');
    });
  }

  it('expires_at is echoed exactly as given (no .000Z) and kept in ms', () => {
    const job = parse(withOptions({ expires_at: '2099-12-31T23:59:59Z' }));
    assert.equal(job.expires_at, '2099-12-31T23:59:59Z');
    assert.equal(job.expires_at_ms, Date.UTC(2099, 11, 31, 23, 59, 59));
    assert.equal(job.state, 'available');
    const offset = parse(withOptions({ expires_at: '2099-12-31T23:59:59.5-05:00' }));
    assert.equal(offset.expires_at, '2099-12-31T23:59:59.5-05:00');
  });

  it("expires_at accepts a relative '+PT2S'", () => {
    const job = parse(withOptions({ expires_at: '+PT2S' }));
    assert.equal(job.expires_at_ms, NOW + 2000);
    assert.equal(job.expires_at, toIso(NOW + 2000));
  });

  it('rejects an expires_at without a time zone', () => {
    invalidPayload(withOptions({ expires_at: '2099-12-31T23:59:59' }), 'options.expires_at');
  });
});

describe('pending', () => {
  it('pending: true enqueues into pending', () => {
    assert.equal(parse(withOptions({ pending: true })).state, 'pending');
    assert.equal(parse(withOptions({ pending: false })).state, 'available');
  });

  it('rejects a non-boolean pending', () => {
    invalidPayload(withOptions({ pending: 'yes' }), 'options.pending');
  });
});

describe('unknown and system fields', () => {
  it('preserves unknown top-level fields in extensions', () => {
    const job = parse({
      type: 'a',
      args: [],
      x_custom_field: 'v',
      x_numeric_extension: 42,
      x_future_spec_attribute: { nested: [1, { deep: true }] },
      version: '2',
    });
    assert.deepEqual(job.extensions, {
      x_custom_field: 'v',
      x_numeric_extension: 42,
      x_future_spec_attribute: { nested: [1, { deep: true }] },
      version: '2',
    });
  });

  it('preserves an unknown field named __proto__ as data (not as the prototype)', () => {
    const job = parse(JSON.parse('{"type":"a","args":[],"__proto__":{"x":1}}'));
    assert.equal(Object.getPrototypeOf(job.extensions), Object.prototype);
    assert.ok(Object.hasOwn(job.extensions, '__proto__'));
  });

  it('does not copy known envelope fields into extensions', () => {
    const job = parse({
      specversion: '1.0',
      id: V7,
      type: 'a',
      queue: 'q',
      args: [],
      meta: {},
      options: {},
      priority: 1,
      timeout: 2,
      timeout_ms: 2000,
      visibility_timeout: 3,
      scheduled_at: '2026-01-01T11:00:00Z',
      expires_at: '2099-01-01T00:00:00Z',
      retry: {},
      unique: { keys: ['type'] },
      tags: ['t'],
      schema: 'urn:ojs:schema:a:v1',
      rate_limit: { max_per_second: 1 },
    });
    assert.deepEqual(job.extensions, {});
  });

  it('ignores client-supplied system fields (core §5.3)', () => {
    const job = parse({
      type: 'a',
      args: [],
      state: 'completed',
      attempt: 7,
      max_attempts: 99,
      created_at: '2000-01-01T00:00:00Z',
      enqueued_at: '2000-01-01T00:00:00Z',
      started_at: '2000-01-01T00:00:00Z',
      completed_at: '2000-01-01T00:00:00Z',
      cancelled_at: '2000-01-01T00:00:00Z',
      discarded_at: '2000-01-01T00:00:00Z',
      result: { forged: true },
      error: { code: 'x' },
      errors: [{ code: 'x' }],
      worker_id: 'w',
      retry_delay_ms: 5,
      next_attempt_at: '2000-01-01T00:00:00Z',
      parent_results: [1],
      workflow_id: 'wf',
      unique_key: 'k',
    });
    assert.equal(job.state, 'available');
    assert.equal(job.attempt, 0);
    assert.equal(job.retry.max_attempts, 3);
    assert.equal(job.created_at, toIso(NOW));
    assert.equal(job.enqueued_at, toIso(NOW));
    for (const field of [
      'started_at',
      'completed_at',
      'cancelled_at',
      'discarded_at',
      'result',
      'error',
      'worker_id',
      'retry_delay_ms',
      'next_attempt_at',
      'parent_results',
      'workflow_id',
      'unique_key',
    ] as const) {
      assert.equal(job[field], undefined, field);
    }
    assert.deepEqual(job.errors, []);
    assert.deepEqual(job.extensions, {});
  });

  it('rejects non-object options', () => {
    invalidPayload({ type: 'a', args: [], options: 'fast' }, 'options');
    invalidPayload({ type: 'a', args: [], options: [] }, 'options');
  });

  it('treats null options as absent', () => {
    assert.equal(parse({ type: 'a', args: [], options: null }).queue, 'default');
  });
});

describe('timeouts', () => {
  it('timeout_ms (HTTP) is kept in ms', () => {
    assert.equal(parse(withOptions({ timeout_ms: 5000 })).timeout_ms, 5000);
    assert.equal(parse({ type: 'a', args: [], timeout_ms: 7000 }).timeout_ms, 7000);
  });

  for (const value of [0, -1, 1.5, '1000', true]) {
    it(`rejects timeout_ms ${JSON.stringify(value)}`, () => {
      invalidPayload(withOptions({ timeout_ms: value }), 'options.timeout_ms');
    });
  }

  it('timeout (JF envelope) is in seconds, or an ISO duration', () => {
    assert.equal(parse({ type: 'a', args: [], timeout: 2 }).timeout_ms, 2000);
    assert.equal(parse(withOptions({ timeout: 1.5 })).timeout_ms, 1500);
    assert.equal(parse(withOptions({ timeout: 'PT5S' })).timeout_ms, 5000);
  });

  it('timeout 0 means the default (no execution timeout)', () => {
    assert.equal(parse(withOptions({ timeout: 0 })).timeout_ms, undefined);
  });

  for (const value of [-1, 'soon', 'PT0S', true]) {
    it(`rejects timeout ${JSON.stringify(value)}`, () => {
      invalidPayload(withOptions({ timeout: value }), 'timeout');
    });
  }

  it('timeout_ms wins over timeout', () => {
    assert.equal(parse(withOptions({ timeout_ms: 100, timeout: 9 })).timeout_ms, 100);
  });

  it('visibility_timeout_ms, visibility_timeout (s or ISO) and the server default', () => {
    assert.equal(parse(withOptions({ visibility_timeout_ms: 3000 })).visibility_timeout_ms, 3000);
    assert.equal(parse(withOptions({ visibility_timeout: 2 })).visibility_timeout_ms, 2000);
    assert.equal(parse(withOptions({ visibility_timeout: 'PT4S' })).visibility_timeout_ms, 4000);
    assert.equal(parse(withOptions({})).visibility_timeout_ms, DEFAULTS.visibilityTimeoutMs);
    assert.equal(
      parseEnqueueRequest({ type: 'a', args: [] }, NOW, { visibilityTimeoutMs: 1234 })
        .visibility_timeout_ms,
      1234,
    );
  });

  for (const value of [0, -5, 2.5, 'x']) {
    it(`rejects visibility_timeout_ms ${JSON.stringify(value)}`, () => {
      invalidPayload(
        withOptions({ visibility_timeout_ms: value }),
        'options.visibility_timeout_ms',
      );
    });
  }
});

describe('tags, schema and rate_limit', () => {
  it('keeps tags', () => {
    assert.deepEqual(parse(withOptions({ tags: ['a', 'b'] })).tags, ['a', 'b']);
  });

  it('rejects tags that are not an array of strings', () => {
    invalidPayload(withOptions({ tags: 'a' }), 'options.tags');
    invalidPayload(withOptions({ tags: [1] }), 'options.tags');
  });

  it('keeps a schema URI and rejects a non-string one', () => {
    assert.equal(
      parse({ type: 'a', args: [], schema: 'urn:ojs:schema:a:v1' }).schema,
      'urn:ojs:schema:a:v1',
    );
    invalidPayload({ type: 'a', args: [], schema: 5 }, 'schema');
  });

  it('parses rate_limit.max_per_second and rejects values below 1', () => {
    const rateLimit = parse(withOptions({ rate_limit: { max_per_second: 2 } })).rate_limit;
    assert.equal(rateLimit?.max_per_second, 2);
    invalidPayload(withOptions({ rate_limit: { max_per_second: 0 } }));
    invalidPayload(withOptions({ rate_limit: 5 }));
  });
});

describe('unique policy', () => {
  it('parses keys, states, period and on_conflict; computes the unique key', () => {
    const job = parse(
      withOptions({
        unique: {
          keys: ['type', 'args'],
          states: ['available'],
          period: 'PT2S',
          on_conflict: 'reject',
        },
      }),
    );
    assert.deepEqual(job.unique, {
      keys: ['type', 'args'],
      states: ['available'],
      on_conflict: 'reject',
      period_ms: 2000,
      period: 'PT2S',
    });
    assert.equal(job.unique_key, computeUniqueKey(job, job.unique!));
    assert.match(job.unique_key!, /^ojs:unique:[0-9a-f]{64}$/);
  });

  it('defaults: reject, all non-terminal states', () => {
    const unique = parse(withOptions({ unique: {} })).unique!;
    assert.equal(unique.on_conflict, 'reject');
    assert.deepEqual([...unique.states].sort(), [
      'active',
      'available',
      'pending',
      'retryable',
      'scheduled',
    ]);
    assert.equal(unique.period_ms, undefined);
  });

  it('accepts a top-level unique (JF placement)', () => {
    assert.ok(parse({ type: 'a', args: [], unique: { keys: ['type'] } }).unique);
  });

  for (const [given, mapped] of [
    ['reject', 'reject'],
    ['ignore', 'ignore'],
    ['use_existing', 'ignore'],
    ['drop', 'ignore'],
    ['replace', 'replace'],
    ['replace_except_schedule', 'replace_except_schedule'],
  ] as const) {
    it(`on_conflict '${given}' -> '${mapped}'`, () => {
      assert.equal(
        parse(withOptions({ unique: { on_conflict: given } })).unique!.on_conflict,
        mapped,
      );
    });
  }

  for (const [unique, field] of [
    [{ keys: ['type', 'colour'] }, 'options.unique.keys'],
    [{ keys: ['Type'] }, 'options.unique.keys'],
    [{ keys: [] }, 'options.unique.keys'],
    [{ keys: 'type' }, 'options.unique.keys'],
    [{ states: ['available', 'running'] }, 'options.unique.states'],
    [{ states: [] }, 'options.unique.states'],
    [{ period: 'PT' }, 'options.unique.period'],
    [{ period: '1h' }, 'options.unique.period'],
    [{ period: 60 }, 'options.unique.period'],
    [{ period: 'PT0S' }, 'options.unique.period'],
    [{ on_conflict: 'reschedule' }, 'options.unique.on_conflict'],
    [{ on_conflict: 'REJECT' }, 'options.unique.on_conflict'],
    [{ args_keys: 'id' }, 'options.unique.args_keys'],
    [{ meta_keys: [1] }, 'options.unique.meta_keys'],
    [{ key: 'id' }, 'options.unique.key'],
    ['yes', 'options.unique.'],
  ] as const) {
    it(`rejects ${JSON.stringify(unique)} with 400 invalid_request`, () => {
      invalidRequest(withOptions({ unique }), field);
    });
  }

  it('the JF `key` form lists args fields', () => {
    const unique = parse(withOptions({ unique: { key: ['user_id'] } }, { args: [{ user_id: 7 }] }))
      .unique!;
    assert.deepEqual(unique.args_keys, ['user_id']);
    assert.ok(unique.keys.includes('type') && unique.keys.includes('args'));
  });

  it('the JF `key` form maps to keys ["type","args"] (queue not part of the key)', () => {
    const unique = parse(withOptions({ unique: { key: ['user_id'] } }, { args: [{ user_id: 7 }] }))
      .unique!;
    assert.deepEqual(unique.keys, ['type', 'args']);
  });

  it('rejects unknown properties of the unique object (schema additionalProperties: false)', () => {
    invalidRequest(withOptions({ unique: { keys: ['type'], strategy: 'strong' } }));
  });

  it("rejects keys containing 'meta' without meta_keys", () => {
    invalidRequest(withOptions({ unique: { keys: ['type', 'meta'] } }));
  });

  it('rejects an empty meta_keys', () => {
    invalidRequest(withOptions({ unique: { keys: ['type', 'meta'], meta_keys: [] } }));
  });

  it('rejects args_keys naming a key absent from args', () => {
    invalidRequest({
      type: 'a',
      args: [{ user_id: 1 }],
      options: { unique: { keys: ['type', 'args'], args_keys: ['account_id'] } },
    });
  });

  it('rejects args_keys when args[0] is not an object', () => {
    invalidRequest({
      type: 'a',
      args: ['plain', 'strings'],
      options: { unique: { keys: ['type', 'args'], args_keys: ['user_id'] } },
    });
  });
});
