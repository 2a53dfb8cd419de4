/**
 * The server's own wire readers and writers (decision 0107) against
 * protobufjs through @grpc/proto-loader, which is what a generated client
 * is: a Job the binding writes reads back field by field as the spec's
 * message, and an enqueue request read by the binding becomes the very PUSH
 * body proto-loader's reading of the same bytes becomes.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import type { JobRecord } from '@ojs/core';
import { fromStruct, fromValue, toStruct, toValue } from '@ojs/sdk/proto-wire';
import { enqueueBody } from '../src/convert.ts';
import {
  decodeAckBatchRequest,
  decodeEnqueueBatchRequest,
  decodeEnqueueManyRequest,
  decodeEnqueueRequest,
} from '../src/enqueue-codec.ts';
import { jobMessage, jobReply, jobsReply } from '../src/job-codec.ts';
import { extensionsService, ojsService } from '../src/proto.ts';

// biome-ignore lint/suspicious/noExplicitAny: messages are read dynamically in assertions.
type Obj = Record<string, any>;

/** JSON values that stress the writer: nesting, long and non-ASCII text, odd numbers and keys. */
const VALUES: unknown[] = [
  null,
  true,
  false,
  0,
  -0,
  -7,
  1.5,
  -(2 ** 53),
  1e300,
  '',
  'plain',
  'é € 😀 \u2028',
  'x'.repeat(300),
  'ü'.repeat(20_000),
  [],
  [1, [2, [3, [null]]]],
  {},
  { a: { b: [null, { c: 'd' }], e: 'f'.repeat(200) } },
  JSON.parse('{"__proto__": {"polluted": true}, "constructor": 1}'),
  Object.fromEntries(Array.from({ length: 300 }, (_, i) => [`key-${i}`, i])),
];

const at = '2026-11-29T08:00:00.123Z';

const record = (over: Partial<JobRecord> = {}): JobRecord =>
  ({
    id: '019abcde-1234-7abc-8def-0123456789ab',
    type: 'email.send',
    queue: 'mail',
    args: VALUES,
    meta: { trace_id: 'tr-9', tenant: 'ä' },
    state: 'active',
    priority: -5,
    attempt: 2,
    retry: {
      max_attempts: 4,
      initial_interval: 'PT1.5S',
      backoff_coefficient: 2.5,
      max_interval: 'PT10M',
      jitter: true,
      non_retryable_errors: ['bad_input'],
      on_exhaustion: 'dead_letter',
      backoff_strategy: 'exponential',
    },
    unique: {
      keys: ['type', 'args'],
      period_ms: 60_000,
      on_conflict: 'replace_except_schedule',
      states: ['available', 'active'],
      args_keys: ['to'],
      meta_keys: [],
    },
    timeout_ms: 90_000,
    visibility_timeout_ms: 30_000,
    tags: ['a', 'b'],
    created_at: at,
    enqueued_at: at,
    scheduled_at: '1969-12-31T23:59:58.500Z',
    started_at: at,
    completed_at: undefined,
    expires_at: '2027-01-01T00:00:00.000Z',
    result: [1, 2],
    errors: [
      {
        code: 'timeout',
        type: 'timeout',
        message: 'took too long',
        retryable: true,
        details: { limit_ms: 90_000 },
        backtrace: ['at a', 'at b'],
        attempt: 1,
        occurred_at: at,
      },
    ],
    workflow_id: 'wf-1',
    workflow_step_id: 'step-2',
    parent_results: [{ ok: true }],
    parent_results_by_step: { 'step-1': { ok: true } },
    extensions: {},
    ...over,
  }) as JobRecord;

const seconds = (ms: number) => ({ seconds: Math.floor(ms / 1000), nanos: (ms % 1000) * 1e6 });

test('a Job the binding writes reads back as the spec message with every field', () => {
  const job = record();
  const { job: pb } = ojsService().GetJob!.responseDeserialize(jobReply(job)) as Obj;
  assert.equal(pb.id, job.id);
  assert.equal(pb.type, 'email.send');
  assert.equal(pb.queue, 'mail');
  assert.deepEqual(pb.args.map(fromValue), VALUES);
  assert.deepEqual(fromStruct(pb.meta), job.meta);
  assert.equal(pb.state, 'JOB_STATE_ACTIVE');
  assert.equal(pb.priority, -5);
  assert.equal(pb.attempt, 2);
  assert.equal(pb.max_attempts, 4);
  assert.deepEqual(pb.retry_policy, {
    max_attempts: 4,
    initial_interval: { seconds: 1, nanos: 500_000_000 },
    backoff_coefficient: 2.5,
    max_interval: { seconds: 600 },
    jitter: true,
    non_retryable_errors: ['bad_input'],
    on_exhaustion: 'dead_letter',
  });
  assert.deepEqual(pb.unique_policy, {
    key: ['type', 'args'],
    period: { seconds: 60 },
    on_conflict: 'UNIQUE_CONFLICT_ACTION_REPLACE_EXCEPT_SCHEDULE',
    states: ['JOB_STATE_AVAILABLE', 'JOB_STATE_ACTIVE'],
    args_keys: ['to'],
    meta_keys: [],
  });
  // A result that is not an object travels as {"value": ...} (G-9).
  assert.deepEqual(fromStruct(pb.result), { value: [1, 2] });
  assert.equal(pb.errors.length, 1);
  const [error] = pb.errors;
  assert.equal(error.code, 'timeout');
  assert.equal(error.message, 'took too long');
  assert.equal(error.retryable, true);
  assert.equal(error.attempt, 1);
  assert.equal(error.backtrace, 'at a\nat b');
  assert.deepEqual(fromStruct(error.details), { limit_ms: 90_000 });
  assert.deepEqual(error.occurred_at, seconds(Date.parse(at)));
  assert.deepEqual(pb.created_at, seconds(Date.parse(at)));
  // Before 1970: a negative int64 (ten bytes on the wire).
  assert.deepEqual(pb.scheduled_at, { seconds: -2, nanos: 500_000_000 });
  assert.equal(pb.completed_at, undefined);
  assert.deepEqual(pb.timeout, { seconds: 90 });
  assert.deepEqual(pb.visibility_timeout, { seconds: 30 });
  assert.deepEqual(pb.tags, ['a', 'b']);
  assert.equal(pb.trace_id, 'tr-9');
  assert.equal(pb.workflow_id, 'wf-1');
  assert.equal(pb.specversion, '1.0');
  assert.deepEqual(pb.parent_results.map(fromValue), [{ ok: true }]);
  assert.deepEqual(fromStruct(pb.parent_results_by_step), { 'step-1': { ok: true } });
  assert.equal(pb.workflow_step_id, 'step-2');
  // The same job alone (StreamJobs) and in a list (Fetch, ListDeadLetter).
  assert.deepEqual(ojsService().StreamJobs!.responseDeserialize(jobMessage(job)), pb);
  const page = ojsService().ListDeadLetter!.responseDeserialize(
    jobsReply([job, record({ id: 'other', args: [] })], { count: 7, nextCursor: '50' }),
  ) as Obj;
  assert.deepEqual(page.jobs[0], pb);
  assert.equal(page.jobs[1].id, 'other');
  assert.equal(page.total_count, 7);
  assert.equal(page.next_cursor, '50');
});

test("each job's timestamps are its own when the jobs of a reply share some and not others", () => {
  // The writer parses each field's text once while it repeats (decision 0121).
  const times = (i: number) => ({
    created_at: new Date(Date.parse(at) + Math.floor(i / 3) * 1001).toISOString(),
    enqueued_at: new Date(Date.parse(at) + Math.floor(i / 3) * 1001).toISOString(),
    started_at: i % 2 === 0 ? at : new Date(Date.parse(at) + i).toISOString(),
    scheduled_at: i === 4 ? undefined : new Date(Date.parse(at) - i * 250).toISOString(),
    completed_at: i % 4 === 1 ? new Date(Date.parse(at) + 7 * i).toISOString() : undefined,
    expires_at: i === 2 ? 'not a time' : undefined,
  });
  const jobs = Array.from({ length: 9 }, (_, i) =>
    record({ id: `job-${i}`, errors: [], ...times(i) }),
  );
  const read = (reply: Buffer) =>
    (ojsService().ListDeadLetter!.responseDeserialize(reply) as Obj).jobs as Obj[];
  const expected = (i: number) => {
    const t = times(i);
    const ms = (text: string | undefined) => {
      const n = text === undefined ? Number.NaN : Date.parse(text);
      return Number.isFinite(n) ? seconds(n) : undefined;
    };
    return {
      created_at: ms(t.created_at),
      enqueued_at: ms(t.enqueued_at),
      started_at: ms(t.started_at),
      scheduled_at: ms(t.scheduled_at),
      completed_at: ms(t.completed_at),
      expires_at: ms(t.expires_at),
    };
  };
  // Forwards, backwards (each text against the one written before it), and one job alone.
  for (const order of [jobs, [...jobs].reverse()]) {
    const pbs = read(jobsReply(order));
    pbs.forEach((pb, k) => {
      const i = Number(order[k]!.id.slice(4));
      const want = expected(i);
      for (const field of Object.keys(want) as (keyof typeof want)[]) {
        assert.deepEqual(pb[field] ?? undefined, want[field], `job ${i} ${field}`);
      }
    });
  }
  const { job: alone } = ojsService().GetJob!.responseDeserialize(jobReply(jobs[3]!)) as Obj;
  assert.deepEqual(alone.started_at, expected(3).started_at);
});

test('an object result goes as it is; proto3 defaults are left out', () => {
  const job = record({
    result: { sent: 1 },
    priority: 0,
    attempt: 0,
    unique: undefined,
    errors: [],
    tags: undefined,
    workflow_id: undefined,
    workflow_step_id: undefined,
    parent_results: undefined,
    parent_results_by_step: undefined,
    meta: {},
  });
  const { job: pb } = ojsService().GetJob!.responseDeserialize(jobReply(job)) as Obj;
  assert.deepEqual(fromStruct(pb.result), { sent: 1 });
  for (const field of ['priority', 'attempt', 'unique_policy', 'trace_id', 'workflow_id']) {
    assert.equal(pb[field], undefined, field);
  }
  assert.deepEqual(pb.errors, []);
  assert.deepEqual(pb.tags, []);
  assert.deepEqual(fromStruct(pb.meta), {});
});

const context = { now: Date.parse(at) };

/** An EnqueueRequest with every field, as a generated client would send it. */
const request = (type: string) => ({
  type,
  args: VALUES.map(toValue),
  options: {
    queue: 'mail',
    priority: -3,
    delay_until: { seconds: 1_800_000_000, nanos: 5_000_000 },
    timeout: { seconds: 12 },
    retry: {
      max_attempts: 5,
      initial_interval: { nanos: 250_000_000 },
      backoff_coefficient: 1.5,
      max_interval: { seconds: 60 },
      jitter: true,
      non_retryable_errors: ['x', 'y'],
      on_exhaustion: 'dead_letter',
    },
    unique: {
      key: ['type'],
      period: { seconds: 30 },
      on_conflict: 'UNIQUE_CONFLICT_ACTION_IGNORE',
      states: ['JOB_STATE_AVAILABLE', 'JOB_STATE_SCHEDULED'],
      args_keys: ['to'],
      meta_keys: ['m'],
    },
    ttl: { seconds: 3600 },
    tags: ['t1', 't2'],
    trace_id: 'trace-1',
    meta: toStruct({ region: 'eu', nested: { deep: [1, { x: 'ü' }] } }),
    max_attempts: 9,
    visibility_timeout: { seconds: 45 },
    pending: true,
  },
});

test('an enqueue request read by the binding becomes the PUSH body proto-loader reading makes', () => {
  const enqueue = ojsService().Enqueue!;
  for (const message of [request('full'), { type: 'bare' }, { type: 'a', args: [] }]) {
    const bytes = enqueue.requestSerialize(message);
    const ours = decodeEnqueueRequest(bytes);
    const theirs = enqueue.requestDeserialize(bytes) as Obj;
    assert.deepEqual(enqueueBody(ours, context), enqueueBody(theirs, context));
  }
  const batch = ojsService().EnqueueBatch!;
  const batchBytes = batch.requestSerialize({
    jobs: [request('one'), { type: 'two', options: { tags: [] } }],
    default_options: { queue: 'defaults', tags: ['d'], priority: 2 },
  });
  const ours = decodeEnqueueBatchRequest(batchBytes) as Obj;
  const theirs = batch.requestDeserialize(batchBytes) as Obj;
  assert.equal(ours.jobs.length, 2);
  for (const i of [0, 1]) {
    assert.deepEqual(
      enqueueBody(ours.jobs[i], context, ours.default_options),
      enqueueBody(theirs.jobs[i], context, theirs.default_options),
    );
  }
  const many = extensionsService().EnqueueMany!;
  const manyBytes = many.requestSerialize({
    items: [{ id: 'id-1', job: request('m1') }, { job: { type: 'm2' } }, {}],
  });
  const mine = decodeEnqueueManyRequest(manyBytes) as Obj;
  const protoLoader = many.requestDeserialize(manyBytes) as Obj;
  assert.deepEqual(
    mine.items.map((item: Obj) => item.id),
    protoLoader.items.map((item: Obj) => item.id),
  );
  for (const i of [0, 1]) {
    assert.deepEqual(
      enqueueBody(mine.items[i].job, context),
      enqueueBody(protoLoader.items[i].job, context),
    );
  }
  assert.equal(mine.items[2].job, undefined);
});

test('a truncated or malformed enqueue request is refused, not read short', () => {
  const bytes = ojsService().Enqueue!.requestSerialize(request('full'));
  for (const end of [1, 8, bytes.length - 1]) {
    assert.throws(() => decodeEnqueueRequest(bytes.subarray(0, end)), RangeError, `at ${end}`);
  }
  // Wire type 7 does not exist.
  assert.throws(() => decodeEnqueueRequest(Buffer.from([0x0f])), RangeError);
});

test('an AckBatch request read by the binding is what proto-loader reads of it', () => {
  const ackBatch = extensionsService().AckBatch!;
  const bytes = ackBatch.requestSerialize({
    acks: [
      { job_id: 'a-1', result: toStruct({ values: VALUES }), worker_id: 'w-1', attempt: 2 },
      { job_id: 'a-2', result: toStruct({}), worker_id: '', attempt: 0 },
      { job_id: 'a-3' },
    ],
    nacks: [
      {
        job_id: 'n-1',
        error: {
          code: 'timeout',
          message: 'took too long ü',
          retryable: true,
          attempt: 3,
          occurred_at: { seconds: 1_764_403_200, nanos: 5_000_000 },
          backtrace: 'at a\nat b',
          details: toStruct({ retryable: false, nested: { list: [1, 'x', null] } }),
        },
        worker_id: 'w-2',
        attempt: 3,
        requeue: true,
      },
      { job_id: 'n-2', error: {} },
      { job_id: 'n-3' },
    ],
  });
  // Structs compared as the JSON the handler takes from them (fromStruct reads both forms).
  const json = (request: Obj) => ({
    acks: request.acks.map((ack: Obj) => ({ ...ack, result: fromStruct(ack.result) })),
    nacks: request.nacks.map((nack: Obj) => ({
      ...nack,
      ...(nack.error === undefined
        ? {}
        : { error: { ...nack.error, details: fromStruct(nack.error.details) } }),
    })),
  });
  assert.deepEqual(
    json(decodeAckBatchRequest(bytes)),
    json(ackBatch.requestDeserialize(bytes) as Obj),
  );
});
