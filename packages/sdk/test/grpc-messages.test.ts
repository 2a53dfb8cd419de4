/**
 * GrpcTransport's own wire codec (decision 0107) against protobufjs through
 * @grpc/proto-loader, which is what other gRPC clients and servers are: a
 * PUSH body written here reads there as the spec's EnqueueRequest, and a
 * Job written there reads here as the HTTP binding's job object.
 */
import assert from 'node:assert/strict';
import { dirname, join } from 'node:path';
import { test } from 'node:test';
import { fileURLToPath } from 'node:url';
import * as loader from '@grpc/proto-loader';
import {
  decodeAckBatchResponse,
  decodeEnqueueManyResponse,
  decodeJobReply,
  decodeJobsReply,
  encodeAckBatchRequest,
  encodeEnqueueBatchRequest,
  encodeEnqueueManyItem,
  encodeEnqueueRequest,
} from '../src/grpc-messages.ts';
import { ProtoReader, ProtoWriter, readValue, writeValue } from '../src/proto-codec.ts';
import {
  fromStruct,
  fromTimestamp,
  fromValue,
  LOADER_OPTIONS,
  PROTO_FILES,
  resultObject,
  resultToStruct,
  toStruct,
  toValue,
} from '../src/proto-wire.ts';

// biome-ignore lint/suspicious/noExplicitAny: messages are read dynamically in assertions.
type Obj = Record<string, any>;
type Method = {
  requestSerialize(value: unknown): Buffer;
  requestDeserialize(bytes: Buffer): Obj;
  responseSerialize(value: unknown): Buffer;
  responseDeserialize(bytes: Buffer): Obj;
};

const definition = loader.loadSync(PROTO_FILES, {
  ...LOADER_OPTIONS,
  includeDirs: [join(dirname(fileURLToPath(import.meta.url)), '..', 'proto')],
}) as unknown as Record<string, Record<string, Method>>;
const ojs = definition['ojs.v1.OJSService']!;
const extensions = definition['ojsts.v1.WorkerExtensions']!;
/** The same protocol read with proto3's defaults filled in: absent and default compare equal. */
const withDefaults = (
  loader.loadSync(PROTO_FILES, {
    ...LOADER_OPTIONS,
    defaults: true,
    includeDirs: [join(dirname(fileURLToPath(import.meta.url)), '..', 'proto')],
  }) as unknown as Record<string, Record<string, Method>>
)['ojsts.v1.WorkerExtensions']!;

/** JSON values that stress the codec: nesting, long and non-ASCII text, odd numbers and keys. */
const VALUES: unknown[] = [
  null,
  true,
  false,
  0,
  -0,
  -7,
  0.1,
  -(2 ** 53),
  2 ** 60,
  1e-300,
  '',
  'plain',
  'é € 😀 \u2028',
  'y'.repeat(31),
  'x'.repeat(300),
  '€'.repeat(20_000),
  [],
  [1, [2, [3, [null, {}]]]],
  {},
  { a: { b: [null, { c: 'd' }], e: 'f'.repeat(200) } },
  JSON.parse('{"__proto__": {"polluted": true}, "constructor": 1}'),
  Object.fromEntries(Array.from({ length: 300 }, (_, i) => [`key-${i}`, { i }])),
];

test('JSON values written here read there, and written there read here', () => {
  for (const value of VALUES) {
    const sent = ojs.Enqueue!.requestDeserialize(
      encodeEnqueueRequest({ type: 't', args: [value], meta: { k: value } }),
    );
    assert.deepEqual(fromValue(sent.args[0]), value);
    assert.deepEqual(fromStruct(sent.options.meta), { k: value });
    // protobufjs's own writer drops a key named __proto__: nothing to read here.
    if (JSON.stringify(value).includes('"__proto__"')) continue;
    const received = decodeJobReply(
      ojs.GetJob!.responseSerialize({
        job: { id: 'j', args: [toValue(value)], meta: toStruct({ k: value }) },
      }),
    );
    assert.deepEqual(received.job?.args, [value]);
    assert.deepEqual(received.job?.meta, { k: value });
    assert.equal(Object.getPrototypeOf(received.job?.meta), Object.prototype);
  }
});

test('a value written and read here comes back as it was, bytes of any length', () => {
  for (const value of VALUES) {
    const w = new ProtoWriter();
    writeValue(w, 1, value);
    const r = new ProtoReader(w.finish());
    assert.equal(r.varint(), 10);
    assert.deepEqual(readValue(r), value);
    assert.equal(r.pos, r.buf.length);
  }
});

test('a PUSH body becomes an EnqueueRequest with every option', () => {
  const body = {
    id: '019abcde-1234-7abc-8def-0123456789ab',
    type: 'email.send',
    args: [{ to: 'a@example.com' }],
    meta: { trace: 'x' },
    options: {
      queue: 'mail',
      priority: -4,
      scheduled_at: '2026-12-01T10:00:00.250Z',
      timeout_ms: 1500,
      visibility_timeout_ms: 60_000,
      expires_at: new Date(Date.now() + 3_600_000).toISOString(),
      tags: ['a', 'b'],
      retry: {
        max_attempts: 5,
        initial_interval: 'PT2S',
        max_interval: 'PT1M',
        backoff_coefficient: 1.5,
        jitter: true,
        non_retryable_errors: ['bad'],
        on_exhaustion: 'dead_letter',
      },
      unique: {
        keys: ['type', 'args'],
        period: 'PT30S',
        on_conflict: 'ignore',
        states: ['available', 'scheduled'],
        args_keys: ['to'],
        meta_keys: ['m'],
      },
      pending: true,
    },
  };
  const request = ojs.Enqueue!.requestDeserialize(encodeEnqueueRequest(body));
  assert.equal(request.type, 'email.send');
  assert.deepEqual(request.args.map(fromValue), body.args);
  const o = request.options;
  assert.equal(o.queue, 'mail');
  assert.equal(o.priority, -4);
  assert.equal(fromTimestamp(o.delay_until), Date.parse(body.options.scheduled_at));
  assert.deepEqual(o.timeout, { seconds: 1, nanos: 500_000_000 });
  assert.deepEqual(o.visibility_timeout, { seconds: 60 });
  assert.ok(o.ttl.seconds >= 3590 && o.ttl.seconds <= 3600, JSON.stringify(o.ttl));
  assert.deepEqual(o.tags, ['a', 'b']);
  assert.deepEqual(fromStruct(o.meta), { trace: 'x' });
  assert.equal(o.pending, true);
  assert.deepEqual(o.retry, {
    max_attempts: 5,
    initial_interval: { seconds: 2 },
    max_interval: { seconds: 60 },
    backoff_coefficient: 1.5,
    jitter: true,
    non_retryable_errors: ['bad'],
    on_exhaustion: 'dead_letter',
  });
  assert.deepEqual(o.unique, {
    key: ['type', 'args'],
    period: { seconds: 30 },
    on_conflict: 'UNIQUE_CONFLICT_ACTION_IGNORE',
    states: ['JOB_STATE_AVAILABLE', 'JOB_STATE_SCHEDULED'],
    args_keys: ['to'],
    meta_keys: ['m'],
  });
  // The same fields in EnqueueBatch entries and EnqueueMany items.
  const batch = ojs.EnqueueBatch!.requestDeserialize(
    encodeEnqueueBatchRequest({ bodies: [body, { type: 'b' }] }),
  );
  assert.deepEqual(batch.jobs[0].options.unique, o.unique);
  assert.equal(batch.jobs[1].type, 'b');
  const many = extensions.EnqueueMany!.requestDeserialize(
    Buffer.concat([encodeEnqueueManyItem(body.id, body), encodeEnqueueManyItem('', { type: 'c' })]),
  );
  assert.deepEqual(
    many.items.map((item: Obj) => [item.id, item.job.type]),
    [
      [body.id, 'email.send'],
      [undefined, 'c'],
    ],
  );
  assert.deepEqual(many.items[0].job.options.retry, o.retry);
});

const ts = (iso: string) => {
  const ms = Date.parse(iso);
  return { seconds: Math.floor(ms / 1000), nanos: (((ms % 1000) + 1000) % 1000) * 1e6 };
};

test('a Job reads as the HTTP binding job object', () => {
  const job = {
    id: 'job-1',
    type: 'email.send',
    queue: 'mail',
    args: [toValue('a'), toValue({ b: [1, 2] })],
    meta: toStruct({ trace_id: 't' }),
    state: 'JOB_STATE_RETRYABLE',
    priority: -9,
    attempt: 2,
    max_attempts: 5,
    retry_policy: {
      max_attempts: 5,
      initial_interval: { seconds: 1, nanos: 500_000_000 },
      backoff_coefficient: 2,
      max_interval: { seconds: 300 },
      jitter: true,
      non_retryable_errors: ['bad'],
      on_exhaustion: 'dead_letter',
    },
    result: toStruct({ value: 42 }),
    errors: [
      {
        code: 'timeout',
        message: 'slow',
        retryable: true,
        attempt: 1,
        occurred_at: ts('2026-11-29T08:00:00.500Z'),
        details: toStruct({ ms: 10 }),
      },
      { code: 'boom', message: 'no', attempt: 2 },
    ],
    created_at: ts('2026-11-29T07:00:00.000Z'),
    enqueued_at: ts('2026-11-29T07:00:00.001Z'),
    scheduled_at: ts('1969-12-31T23:59:58.250Z'),
    started_at: ts('2026-11-29T07:30:00.000Z'),
    timeout: { seconds: 90 },
    visibility_timeout: { seconds: 30 },
    tags: ['x'],
    trace_id: 't',
    workflow_id: 'wf',
    specversion: '1.0',
    parent_results: [toValue({ ok: 1 })],
    parent_results_by_step: toStruct({ s1: { ok: 1 } }),
    workflow_step_id: 's2',
  };
  const { job: read } = decodeJobReply(ojs.GetJob!.responseSerialize({ job }));
  const error1 = {
    code: 'timeout',
    type: 'timeout',
    message: 'slow',
    retryable: true,
    attempt: 1,
    occurred_at: '2026-11-29T08:00:00.500Z',
    details: { ms: 10 },
  };
  const error2 = {
    code: 'boom',
    type: 'boom',
    message: 'no',
    retryable: false,
    attempt: 2,
    occurred_at: undefined,
  };
  assert.deepEqual(read, {
    specversion: '1.0',
    id: 'job-1',
    type: 'email.send',
    queue: 'mail',
    args: ['a', { b: [1, 2] }],
    meta: { trace_id: 't' },
    state: 'retryable',
    priority: -9,
    attempt: 2,
    max_attempts: 5,
    retry: {
      max_attempts: 5,
      initial_interval: 'PT1.5S',
      backoff_coefficient: 2,
      max_interval: 'PT300S',
      jitter: true,
      non_retryable_errors: ['bad'],
      on_exhaustion: 'dead_letter',
    },
    // A result that is not an object travels as {"value": ...} (G-9).
    result: 42,
    errors: [error1, error2],
    error: error2,
    created_at: '2026-11-29T07:00:00.000Z',
    enqueued_at: '2026-11-29T07:00:00.001Z',
    // Before 1970: a negative int64 on the wire.
    scheduled_at: '1969-12-31T23:59:58.250Z',
    started_at: '2026-11-29T07:30:00.000Z',
    timeout_ms: 90_000,
    visibility_timeout_ms: 30_000,
    tags: ['x'],
    workflow_id: 'wf',
    parent_results: [{ ok: 1 }],
    parent_results_by_step: { s1: { ok: 1 } },
    workflow_step_id: 's2',
  });
  // A bare Job: the HTTP binding's defaults.
  assert.deepEqual(decodeJobReply(ojs.GetJob!.responseSerialize({ job: { id: 'j' } })).job, {
    specversion: '1.0',
    id: 'j',
    type: undefined,
    queue: 'default',
    args: [],
    meta: {},
    state: undefined,
    priority: 0,
    attempt: 0,
    max_attempts: 0,
  });
  assert.deepEqual(decodeJobReply(ojs.Enqueue!.responseSerialize({})), {});
  // Lists of jobs, with ListDeadLetter's paging.
  const page = decodeJobsReply(
    ojs.ListDeadLetter!.responseSerialize({
      jobs: [job, { id: 'k' }],
      total_count: 12,
      next_cursor: '2',
    }),
    true,
  );
  assert.deepEqual(
    page.jobs.map((j) => j.id),
    ['job-1', 'k'],
  );
  assert.equal(page.total_count, 12);
  assert.equal(page.next_cursor, '2');
});

test('the jobs of one reply keep their own timestamps, shared or not between jobs and fields', () => {
  // Texts are formatted once per run of equal values in a field: a Fetch's
  // jobs alternate created_at and started_at, some share them, some do not.
  const times = [
    ['2026-11-29T07:00:00.000Z', '2026-11-29T07:30:00.000Z'],
    ['2026-11-29T07:00:00.000Z', '2026-11-29T07:30:00.000Z'],
    ['2026-11-29T07:30:00.000Z', '2026-11-29T07:00:00.000Z'],
    ['2026-11-29T07:00:00.001Z', '2026-11-29T07:30:00.000Z'],
    ['2026-11-29T07:00:00.001Z', '2026-11-29T07:00:00.001Z'],
  ];
  const jobs = times.map(([created, started], i) => ({
    id: `j${i}`,
    created_at: ts(created!),
    enqueued_at: ts(created!),
    started_at: ts(started!),
    errors: [{ code: 'e', attempt: 1, occurred_at: ts(started!) }],
  }));
  const read = decodeJobsReply(ojs.Fetch!.responseSerialize({ jobs })).jobs;
  assert.deepEqual(
    read.map((job) => [job.created_at, job.enqueued_at, job.started_at, job.error?.occurred_at]),
    times.map(([created, started]) => [created, created, started, started]),
  );
});

test('EnqueueMany results read with their job or their error', () => {
  const { results } = decodeEnqueueManyResponse(
    extensions.EnqueueMany!.responseSerialize({
      results: [
        { status: 'created', job: { id: 'a', type: 't' } },
        {
          status: 'error',
          code: 8,
          error_code: 'queue_full',
          error_message: 'full',
          error_metadata: { queue: 'q', retryable: 'true' },
        },
        { status: 'dropped' },
      ],
    }),
  );
  assert.equal(results.length, 3);
  assert.equal(results[0]!.job?.id, 'a');
  assert.deepEqual(
    { ...results[1], job: undefined },
    {
      status: 'error',
      code: 8,
      error_code: 'queue_full',
      error_message: 'full',
      error_metadata: { queue: 'q', retryable: 'true' },
      job: undefined,
    },
  );
  assert.equal(results[2]!.status, 'dropped');
  assert.equal(results[2]!.job, undefined);
});

test('an AckBatch request written here is the one proto-loader writes, and its results read as proto-loader reads them', () => {
  const details = { retryable: false, nested: { list: [1, 'x', null] } };
  const acks = [
    { job_id: 'a-1', result: { ok: true, n: 3 }, worker_id: 'w-1', attempt: 2 },
    { job_id: 'a-2', result: 'text', worker_id: '', attempt: 0 },
    { job_id: 'a-3', result: {}, worker_id: 'w-1', attempt: 1 },
    { job_id: 'a-4', result: undefined, worker_id: 'w-1', attempt: 1 },
  ];
  const nacks = [
    {
      job_id: 'n-1',
      error: {
        code: 'timeout',
        message: 'slow',
        retryable: true,
        backtrace: 'at a\nat b',
        details,
      },
      worker_id: 'w-ä',
      attempt: 3,
      requeue: false,
    },
    {
      job_id: 'n-2',
      error: { code: undefined, message: '', retryable: false, backtrace: '', details: {} },
      worker_id: '',
      attempt: 0,
      requeue: true,
    },
  ];
  const written = encodeAckBatchRequest({
    acks: acks.map((ack) => ({ ...ack, result: resultObject(ack.result) })),
    nacks,
  });
  const theirs = extensions.AckBatch!.requestSerialize({
    acks: acks.map((ack) => ({ ...ack, result: resultToStruct(ack.result) })),
    nacks: nacks.map((nack) => ({
      ...nack,
      error: { ...nack.error, details: toStruct(nack.error.details) },
    })),
  });
  // The same message: protobufjs also writes fields set to their proto3
  // default ('' and 0), which a reader takes as unset.
  assert.deepEqual(
    withDefaults.AckBatch!.requestDeserialize(written),
    withDefaults.AckBatch!.requestDeserialize(theirs),
  );
  const read = extensions.AckBatch!.requestDeserialize(written);
  assert.deepEqual(fromStruct(read.acks[0].result), { ok: true, n: 3 });
  assert.deepEqual(fromStruct(read.acks[1].result), { value: 'text' });
  assert.deepEqual(fromStruct(read.acks[2].result), {});
  assert.equal(read.acks[3].result, undefined);
  assert.deepEqual(fromStruct(read.nacks[0].error.details), details);

  const response = {
    results: [
      { job_id: 'a-1', status: 'ok', state: 'JOB_STATE_COMPLETED', attempt: 2 },
      { job_id: 'n-1', status: 'ok', state: 'JOB_STATE_RETRYABLE', attempt: 3 },
      {
        job_id: 'x',
        status: 'conflict',
        error_code: 'conflict',
        error_message: 'not yours',
        retryable: false,
      },
      { job_id: 'y', status: 'invalid', error_code: 'invalid_request', retryable: true },
    ],
  };
  const bytes = extensions.AckBatch!.responseSerialize(response);
  const expected = extensions.AckBatch!.responseDeserialize(bytes);
  const ours = decodeAckBatchResponse(bytes);
  assert.deepEqual(
    ours.results.map((r) => r.state),
    ['completed', 'retryable', undefined, undefined],
  );
  assert.deepEqual(
    ours.results.map(({ state: _s, ...rest }) => rest),
    expected.results.map(({ state: _s, ...rest }: Obj) => rest),
  );
});

test('a truncated message is refused, not read short', () => {
  const bytes = ojs.GetJob!.responseSerialize({
    job: { id: 'job-1', args: [toValue('x'.repeat(200))] },
  });
  for (const end of [1, 5, bytes.length - 1]) {
    assert.throws(() => decodeJobReply(bytes.subarray(0, end)), RangeError, `at ${end}`);
  }
});

test('ProtoReader.string: short texts read again (kept by a hash of their bytes) come back exactly', () => {
  // More distinct short texts than the reader keeps, so that slots are
  // shared and replaced; texts that differ in one byte, in length only, at
  // the 31/32-byte boundary of the short path, and non-ASCII ones.
  const texts: string[] = ['', 'a', 'bench', 'bench.noop', 'bench.noop ', 'bench.nooq', 'ä', 'aä'];
  for (let i = 0; i < 5000; i++) texts.push(`q-${i.toString(36)}`, `${i}`.padStart(31, 'x'));
  texts.push('y'.repeat(31), 'y'.repeat(32), 'y'.repeat(30));
  const w = new ProtoWriter();
  for (const text of texts) w.string(1, text);
  const bytes = w.finish();
  // Twice in order, then backwards: every text is read both fresh and after others took its slot.
  for (const order of [texts, texts, [...texts].reverse()]) {
    const all = new ProtoReader(
      Buffer.concat(
        order.map((text) => {
          const one = new ProtoWriter();
          one.string(1, text);
          return one.finish();
        }),
      ),
    );
    for (const text of order) {
      assert.equal(all.varint(), 10);
      assert.equal(all.string(), text);
    }
  }
  const r = new ProtoReader(bytes);
  for (const text of texts) {
    assert.equal(r.varint(), 10);
    assert.equal(r.string(), text);
  }
});
