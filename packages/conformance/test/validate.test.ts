import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { BUNDLED_SUITES, loadSuites } from '../src/loader.ts';
import { resolveValue } from '../src/seed-templates.ts';
import type { Json, JsonObject, SeedTestCase } from '../src/types.ts';
import { allowedNext, detectKind, validateDocument, validateTransitions } from '../src/validate.ts';

const UUID7 = '0190abcd-ef01-7abc-8def-0123456789ab';
const request = (extra: Record<string, unknown> = {}) => ({
  type: 'email.send',
  args: ['a'],
  ...extra,
});
const envelope = (extra: Record<string, unknown> = {}) => ({
  specversion: '1.0',
  id: UUID7,
  type: 'email.send',
  queue: 'default',
  args: ['a'],
  ...extra,
});

function issuesOf(doc: unknown, kind: 'envelope' | 'request' | 'auto' = 'auto') {
  return validateDocument(doc, { kind }).issues.map((i) => `${i.path} ${i.rule}`);
}

/**
 * Invalid examples from the digests: http-binding §5.2 (field constraints), §5.3 (timestamps),
 * §5.5 (retry policy), features §1.3/§1.9 (durations, retry validation) and §2.3 (unique).
 * Each entry: document, the path and the rule the validator must report.
 */
const INVALID: [string, Record<string, unknown>, string, string][] = [
  ['uppercase id', envelope({ id: UUID7.toUpperCase() }), '$.id', 'format.uuidv7'],
  ['v4 id', envelope({ id: '6ba7b810-9dad-41d1-80b4-00c04fd430c8' }), '$.id', 'format.uuidv7'],
  ['empty id', envelope({ id: '' }), '$.id', 'format.uuidv7'],
  ['type Email.Send', request({ type: 'Email.Send' }), '$.type', 'pattern'],
  ['type with a space', request({ type: 'email send' }), '$.type', 'pattern'],
  ['type starting with a digit', request({ type: '1email.send' }), '$.type', 'pattern'],
  ['empty type', request({ type: '' }), '$.type', 'pattern'],
  ['type email@send!', request({ type: 'email@send!' }), '$.type', 'pattern'],
  ['type over 255 bytes', request({ type: `a${'b'.repeat(255)}` }), '$.type', 'max_bytes'],
  ['missing type', { args: [] }, '$.type', 'required'],
  ['type not a string', request({ type: 5 }), '$.type', 'type'],
  ['queue Default', request({ options: { queue: 'Default' } }), '$.options.queue', 'pattern'],
  ['queue my_queue!', request({ options: { queue: 'my_queue!' } }), '$.options.queue', 'pattern'],
  ['queue -invalid', request({ queue: '-invalid' }), '$.queue', 'pattern'],
  ['queue with a space', envelope({ queue: 'my queue' }), '$.queue', 'pattern'],
  ['args object', request({ args: { to: 'x' } }), '$.args', 'type'],
  ['args string', request({ args: 'x' }), '$.args', 'type'],
  ['args number', request({ args: 7 }), '$.args', 'type'],
  ['args boolean', request({ args: true }), '$.args', 'type'],
  ['args null', request({ args: null }), '$.args', 'required'],
  ['args missing', { type: 'email.send' }, '$.args', 'required'],
  [
    'args with a type annotation',
    request({ args: [{ __class__: 'User', id: 1 }] }),
    '$.args[0].__class__',
    'no_type_annotation',
  ],
  [
    'args with $type',
    request({ args: [[{ $type: 'System.X' }]] }),
    '$.args[0][0]["$type"]',
    'no_type_annotation',
  ],
  ['meta not an object', request({ meta: ['x'] }), '$.meta', 'type'],
  ['meta over 64 KiB', request({ meta: { big: 'x'.repeat(70_000) } }), '$.meta', 'max_bytes'],
  ['priority 101', request({ options: { priority: 101 } }), '$.options.priority', 'maximum'],
  ['priority -101', request({ options: { priority: -101 } }), '$.options.priority', 'minimum'],
  ['priority 999999', request({ priority: 999999 }), '$.priority', 'maximum'],
  ['priority 1.5', request({ priority: 1.5 }), '$.priority', 'type'],
  ['priority URGENT', request({ priority: 'URGENT' }), '$.priority', 'enum'],
  [
    'max_attempts -1',
    request({ options: { retry: { max_attempts: -1 } } }),
    '$.options.retry.max_attempts',
    'minimum',
  ],
  [
    'backoff_coefficient 0.5',
    request({ options: { retry: { backoff_coefficient: 0.5 } } }),
    '$.options.retry.backoff_coefficient',
    'minimum',
  ],
  [
    'initial_interval P',
    request({ retry: { initial_interval: 'P' } }),
    '$.retry.initial_interval',
    'format.duration',
  ],
  [
    'initial_interval PT',
    request({ retry: { initial_interval: 'PT' } }),
    '$.retry.initial_interval',
    'format.duration',
  ],
  [
    'initial_interval PT1.5M',
    request({ retry: { initial_interval: 'PT1.5M' } }),
    '$.retry.initial_interval',
    'format.duration',
  ],
  [
    'initial_interval 5s',
    request({ retry: { initial_interval: '5s' } }),
    '$.retry.initial_interval',
    'format.duration',
  ],
  [
    'initial_interval PT0S',
    request({ retry: { initial_interval: 'PT0S' } }),
    '$.retry.initial_interval',
    'minimum',
  ],
  [
    'max_interval below initial',
    request({ retry: { initial_interval: 'PT10S', max_interval: 'PT5S' } }),
    '$.retry.max_interval',
    'minimum',
  ],
  ['jitter not boolean', request({ retry: { jitter: 'yes' } }), '$.retry.jitter', 'type'],
  [
    'non_retryable_errors not an array',
    request({ retry: { non_retryable_errors: 'auth.*' } }),
    '$.retry.non_retryable_errors',
    'type',
  ],
  [
    'on_exhaustion unknown',
    request({ retry: { on_exhaustion: 'explode' } }),
    '$.retry.on_exhaustion',
    'enum',
  ],
  [
    'unknown retry field',
    request({ retry: { max_retries: 3 } }),
    '$.retry.max_retries',
    'additional_property',
  ],
  [
    'unique key unknown',
    request({ options: { unique: { keys: ['colour'] } } }),
    '$.options.unique.keys[0]',
    'enum',
  ],
  [
    'unique meta without meta_keys',
    request({ unique: { keys: ['type', 'meta'] } }),
    '$.unique.meta_keys',
    'dependent_required',
  ],
  [
    'unique args_keys missing in args',
    request({ args: [{ user: 1 }], unique: { keys: ['args'], args_keys: ['tenant'] } }),
    '$.unique.args_keys[0]',
    'reference',
  ],
  ['unique state unknown', request({ unique: { states: ['done'] } }), '$.unique.states[0]', 'enum'],
  [
    'unique period malformed',
    request({ unique: { period: '1 hour' } }),
    '$.unique.period',
    'format.duration',
  ],
  [
    'unique on_conflict unknown',
    request({ unique: { on_conflict: 'explode' } }),
    '$.unique.on_conflict',
    'enum',
  ],
  ['unique keys empty', request({ unique: { keys: [] } }), '$.unique.keys', 'min_items'],
  [
    'scheduled_at without time zone',
    request({ scheduled_at: '2026-01-01T00:00:00' }),
    '$.scheduled_at',
    'format.datetime',
  ],
  [
    'expires_at malformed',
    request({ options: { expires_at: 'tomorrow' } }),
    '$.options.expires_at',
    'format.datetime',
  ],
  [
    'relative time in an envelope',
    envelope({ scheduled_at: '+PT5S' }),
    '$.scheduled_at',
    'format.datetime',
  ],
  ['bad relative time', request({ scheduled_at: '+5s' }), '$.scheduled_at', 'format.duration'],
  ['specversion 2.0', envelope({ specversion: '2.0' }), '$.specversion', 'enum'],
  ['state running', envelope({ state: 'running' }), '$.state', 'enum'],
  ['attempt -1', envelope({ attempt: -1 }), '$.attempt', 'minimum'],
  [
    'created_at malformed',
    envelope({ created_at: '2026-02-30T00:00:00Z' }),
    '$.created_at',
    'format.datetime',
  ],
  ['timeout_ms zero', request({ options: { timeout_ms: 0 } }), '$.options.timeout_ms', 'minimum'],
  ['tags not strings', request({ options: { tags: ['a', 1] } }), '$.options.tags[1]', 'type'],
];

describe("validateDocument rejects the digests' invalid examples with the right rule", () => {
  for (const [name, doc, path, rule] of INVALID) {
    it(name, () => {
      const found = issuesOf(doc);
      assert.ok(
        found.includes(`${path} ${rule}`),
        `expected "${path} ${rule}", got ${JSON.stringify(found)}`,
      );
    });
  }
});

describe('validateDocument', () => {
  it('reports every missing attribute of an envelope (L0-ENV-001)', () => {
    assert.deepEqual(issuesOf({}, 'envelope'), [
      '$.specversion required',
      '$.id required',
      '$.type required',
      '$.queue required',
      '$.args required',
    ]);
    assert.deepEqual(issuesOf({}, 'request'), ['$.type required', '$.args required']);
  });
  it('reports several problems of one document, each with a spec reference', () => {
    const { issues } = validateDocument({
      type: 'Bad Type',
      args: 'x',
      options: { queue: 'Q', priority: 500 },
    });
    assert.deepEqual(
      issues.map((i) => [i.path, i.rule, i.ref]),
      [
        ['$.type', 'pattern', 'L0-ENV-003'],
        ['$.options.queue', 'pattern', 'L0-ENV-004'],
        ['$.args', 'type', 'L0-ENV-005'],
        ['$.options.priority', 'maximum', 'L4-PRI-002'],
      ],
    );
    assert.match(issues[0]!.message, /"Bad Type" does not match/);
  });
  it('explains why an id is not a UUIDv7', () => {
    const message = (id: string) => validateDocument(envelope({ id })).issues[0]!.message;
    assert.match(message(UUID7.toUpperCase()), /must be lowercase/);
    assert.match(message('6ba7b810-9dad-41d1-80b4-00c04fd430c8'), /version 4 UUID/);
    assert.match(message('nope'), /is not a UUID/);
    assert.match(message(''), /is empty/);
  });
  it('uses the array index in paths', () => {
    assert.equal(validateDocument({ args: [] }, { basePath: '$[3]' }).issues[0]!.path, '$[3].type');
  });
  it('auto picks envelope for documents with specversion or system fields', () => {
    assert.equal(detectKind(envelope()), 'envelope');
    assert.equal(detectKind({ type: 'a', args: [], state: 'available' }), 'envelope');
    assert.equal(detectKind(request()), 'request');
    assert.equal(detectKind([]), 'request');
    assert.deepEqual(issuesOf([1, 2]), ['$ type']);
  });
  it('accepts full envelopes, unknown fields and both named and numeric priorities', () => {
    assert.deepEqual(
      issuesOf(
        envelope({
          meta: { trace_id: 'x' },
          state: 'completed',
          attempt: 2,
          max_attempts: 3,
          priority: 'HIGH',
          created_at: '2026-01-02T03:04:05.123Z',
          enqueued_at: '2026-01-02T03:04:05+02:00',
          completed_at: '2026-01-02T03:04:06Z',
          result: { any: ['thing'] },
          errors: [{ type: 'x', message: 'y' }],
          retry: {
            max_attempts: 3,
            initial_interval: 'PT1S',
            backoff_coefficient: 2.0,
            max_interval: 'PT5M',
            jitter: true,
            non_retryable_errors: ['auth.*'],
            on_exhaustion: 'dead_letter',
            backoff_strategy: 'linear',
          },
          unique: {
            keys: ['type', 'args'],
            period: 'P1W',
            states: ['available'],
            on_conflict: 'replace',
          },
          x_future_field: { a: 1 },
        }),
      ),
      [],
    );
    assert.deepEqual(
      issuesOf(
        request({
          scheduled_at: '+PT5S',
          options: {
            priority: -100,
            expires_at: '2099-12-31T23:59:59Z',
            visibility_timeout: 'PT30S',
          },
        }),
      ),
      [],
    );
  });
  it('accepts every job the seed examples and the bundled suite enqueue', async () => {
    const tests = (await loadSuites([BUNDLED_SUITES])) as SeedTestCase[];
    const ctx = { captures: new Map<string, Json>(), nowMs: Date.now() };
    let checked = 0;
    for (const test of tests) {
      const bodies: Json[] = [];
      if (test.input) bodies.push(test.input);
      for (const step of test.steps) {
        const status = step.expect.status;
        if (
          step.method === 'POST' &&
          step.path === '/ojs/v1/jobs' &&
          (status === 201 || status === 200)
        ) {
          bodies.push(step.body!);
        }
        if (step.path === '/ojs/v1/jobs/batch')
          bodies.push(...((step.body as JsonObject).jobs as Json[]));
      }
      for (const body of bodies) {
        const resolved = resolveValue(body, ctx);
        if (resolved.unresolved.length > 0) continue; // needs a capture from an earlier step
        assert.deepEqual(issuesOf(resolved.value), [], `${test.test_id}: ${JSON.stringify(body)}`);
        checked++;
      }
    }
    assert.ok(checked >= 30, `checked ${checked} bodies`);
  });
});

describe('validateTransitions', () => {
  const issues = (seq: unknown, table: 'core' | 'strict' = 'core') =>
    validateTransitions(seq, { table }).map((i) => `${i.path} ${i.rule}: ${i.message}`);
  it('accepts the lifecycle paths of the table', () => {
    for (const seq of [
      ['available', 'active', 'completed'],
      ['scheduled', 'available', 'active', 'retryable', 'available', 'active', 'discarded'],
      ['pending', 'available', 'cancelled'],
      ['available', 'active', 'active', 'completed'],
    ]) {
      assert.deepEqual(issues(seq), [], seq.join(' -> '));
      assert.deepEqual(issues(seq, 'strict'), [], seq.join(' -> '));
    }
  });
  it('rejects transitions outside the table, naming the allowed ones', () => {
    assert.deepEqual(issues(['available', 'completed']), [
      '$[1] transition: available -> completed is not allowed: from available only active, cancelled, discarded are allowed',
    ]);
    assert.deepEqual(issues(['completed', 'active']), [
      '$[1] transition: completed -> active is not allowed: completed is terminal',
    ]);
    assert.deepEqual(issues(['available', 'active', 'completed', 'retryable']).length, 1);
  });
  it('the core table adds the Level 1-2 transitions; --strict is L0-LC-002 only', () => {
    for (const seq of [
      ['available', 'active', 'available'],
      ['scheduled', 'discarded'],
      ['available', 'discarded'],
      ['discarded', 'available'],
    ]) {
      assert.deepEqual(issues(seq), [], seq.join(' -> '));
      assert.equal(issues(seq, 'strict').length, 1, seq.join(' -> '));
    }
    assert.deepEqual(allowedNext('scheduled', 'strict'), ['available', 'cancelled']);
  });
  it('reads {state} objects and {"states": [...]}, and flags unknown states', () => {
    assert.deepEqual(issues([{ state: 'available' }, { state: 'active' }, { state: 'done' }]), [
      '$[2].state enum: "done" is not one of the 8 states: scheduled, available, pending, active, completed, retryable, cancelled, discarded',
    ]);
    assert.deepEqual(
      issues({ states: ['available', 'completed'] }).map((s) => s.split(':')[0]),
      ['$.states[1] transition'],
    );
    assert.deepEqual(issues('available'), [
      '$ type: must be an array of states (or {"states": [...]}), got string "available"',
    ]);
    assert.deepEqual(issues([]), ['$ min_items: the sequence has no states']);
  });
});
