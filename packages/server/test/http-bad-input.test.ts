/**
 * Every bad request answers the exact status, error code, media type,
 * OJS-Version and X-Request-Id (= error.request_id), and leaves the store
 * exactly as it was.
 */
import assert from 'node:assert/strict';
import { afterEach, beforeEach, describe, it } from 'node:test';
import type { LightMyRequestResponse } from 'fastify';
import { assertError, type Ctx, type Json, setup, snapshot } from './helpers.ts';

const UNKNOWN_ID = '01900000-0000-7000-8000-00000000dead';
const MIB = 1024 * 1024;

type Obj = Record<string, unknown>;

let ctx: Ctx;
/** Seeded jobs: available (default), completed (done-q), active for w1 (work). */
let seed: { available: Json; completed: Json; active: Json };

async function seedStore(c: Ctx) {
  const available = await c.enqueue({ type: 'seed.available', args: [1] });
  const completed = await c.enqueue({
    type: 'seed.completed',
    args: [2],
    options: { queue: 'done-q' },
  });
  const [claimed] = await c.fetch({ queues: ['done-q'], worker_id: 'w0' });
  assert.equal(claimed.id, completed.id);
  const ack = await c.req('POST', '/ojs/v1/workers/ack', { job_id: completed.id });
  assert.equal(ack.statusCode, 200);
  const active = await c.enqueue({ type: 'seed.active', args: [3], options: { queue: 'work' } });
  const [running] = await c.fetch({ queues: ['work'], worker_id: 'w1' });
  assert.equal(running.id, active.id);
  return { available, completed, active: running };
}

beforeEach(async () => {
  ctx = await setup();
  seed = await seedStore(ctx);
});

afterEach(async () => {
  await ctx.close();
});

/** Sends the request, asserts the error response, and that nothing changed in the store. */
async function rejected(
  send: () => Promise<LightMyRequestResponse>,
  status: number,
  code: string | null,
): Promise<Json> {
  const before = await snapshot(ctx.engine);
  const res = await send();
  const error = assertError(res, status, code);
  assert.equal(await snapshot(ctx.engine), before, 'the store must be unchanged');
  return error;
}

const post = (url: string, payload?: unknown, headers?: Record<string, string>) => () =>
  ctx.req('POST', url, payload, headers);

describe('unreadable bodies', () => {
  for (const url of [
    '/ojs/v1/jobs',
    '/ojs/v1/jobs/batch',
    '/ojs/v1/workers/fetch',
    '/ojs/v1/workers/ack',
    '/ojs/v1/workers/nack',
    '/ojs/v1/workers/heartbeat',
  ]) {
    it(`malformed JSON on ${url} -> 400 invalid_payload`, async () => {
      await rejected(
        post(url, '{"type": "a.b", "args": [', { 'content-type': 'application/json' }),
        400,
        'invalid_payload',
      );
    });
  }

  it('malformed JSON with the OJS media type -> 400 invalid_payload', async () => {
    await rejected(
      post('/ojs/v1/jobs', '{nope}', { 'content-type': 'application/openjobspec+json' }),
      400,
      'invalid_payload',
    );
  });

  it('empty body with a JSON content type -> 400 invalid_payload', async () => {
    await rejected(
      post('/ojs/v1/jobs', '', { 'content-type': 'application/json' }),
      400,
      'invalid_payload',
    );
  });

  it('whitespace-only body -> 400 invalid_payload', async () => {
    await rejected(
      post('/ojs/v1/jobs', '  \n ', { 'content-type': 'application/json' }),
      400,
      'invalid_payload',
    );
  });

  it('no body at all -> 400 invalid_payload', async () => {
    await rejected(() => ctx.req('POST', '/ojs/v1/jobs'), 400, 'invalid_payload');
  });

  for (const body of ['[]', '[{"type":"a.b","args":[]}]', 'null', '"job"', '42', 'true']) {
    it(`a JSON ${body} body (not an object) -> 400 invalid_payload`, async () => {
      await rejected(
        post('/ojs/v1/jobs', body, { 'content-type': 'application/json' }),
        400,
        'invalid_payload',
      );
    });
  }

  it('wrong content type (text/plain) with a valid JSON text -> 400, nothing stored', async () => {
    await rejected(
      post('/ojs/v1/jobs', JSON.stringify({ type: 'a.b', args: [] }), {
        'content-type': 'text/plain',
      }),
      400,
      null,
    );
  });

  it('wrong content type (text/plain) -> error code invalid_request', async () => {
    await rejected(
      post('/ojs/v1/jobs', JSON.stringify({ type: 'a.b', args: [] }), {
        'content-type': 'text/plain',
      }),
      400,
      'invalid_request',
    );
  });

  it('wrong content type (application/x-www-form-urlencoded) -> 400', async () => {
    await rejected(
      post('/ojs/v1/jobs', 'type=a.b', { 'content-type': 'application/x-www-form-urlencoded' }),
      400,
      null,
    );
  });

  it('oversized body (> 2 MiB) -> 413 payload_too_large with max_bytes', async () => {
    const payload = JSON.stringify({ type: 'a.b', args: ['x'.repeat(2 * MIB)] });
    const error = await rejected(
      post('/ojs/v1/jobs', payload, { 'content-type': 'application/json' }),
      413,
      'payload_too_large',
    );
    assert.equal(error.details?.max_bytes, 2 * MIB);
  });

  it('a body just under 2 MiB is not rejected for size', async () => {
    const payload = JSON.stringify({ type: 'a.b', args: ['x'.repeat(2 * MIB - 100)] });
    const res = await ctx.req('POST', '/ojs/v1/jobs', payload, {
      'content-type': 'application/json',
    });
    assert.equal(res.statusCode, 201);
  });

  it('oversized batch body -> 413, nothing stored', async () => {
    const big = 'x'.repeat(MIB);
    const payload = JSON.stringify({
      jobs: [
        { type: 'a.b', args: [big] },
        { type: 'a.b', args: [big] },
        { type: 'a.b', args: [big] },
      ],
    });
    await rejected(
      post('/ojs/v1/jobs/batch', payload, { 'content-type': 'application/json' }),
      413,
      'payload_too_large',
    );
  });
});

describe('configured body limit', () => {
  it('413 details.max_bytes reports the configured limit', async () => {
    const small = await setup({ bodyLimit: 1024 });
    try {
      const res = await small.req('POST', '/ojs/v1/jobs', {
        type: 'a.b',
        args: ['x'.repeat(2000)],
      });
      const error = assertError(res, 413, 'payload_too_large');
      assert.equal(error.details?.max_bytes, 1024);
    } finally {
      await small.close();
    }
  });

  it('the configured limit is enforced (413 above it, nothing stored)', async () => {
    const small = await setup({ bodyLimit: 1024 });
    try {
      const before = await snapshot(small.engine);
      const res = await small.req('POST', '/ojs/v1/jobs', {
        type: 'a.b',
        args: ['x'.repeat(2000)],
      });
      assertError(res, 413, 'payload_too_large');
      assert.equal(await snapshot(small.engine), before);
    } finally {
      await small.close();
    }
  });
});

describe('invalid envelopes on POST /ojs/v1/jobs', () => {
  const cases: Array<[string, Obj, number, string]> = [
    ['missing type', { args: [] }, 400, 'invalid_payload'],
    ['type Email.Send', { type: 'Email.Send', args: [] }, 400, 'invalid_payload'],
    ['type "email send"', { type: 'email send', args: [] }, 400, 'invalid_payload'],
    ['type 1email.send', { type: '1email.send', args: [] }, 400, 'invalid_payload'],
    ['empty type', { type: '', args: [] }, 400, 'invalid_payload'],
    ['type email@send!', { type: 'email@send!', args: [] }, 400, 'invalid_payload'],
    ['256-byte type', { type: 'a'.repeat(256), args: [] }, 400, 'invalid_payload'],
    [
      'queue Default',
      { type: 'a.b', args: [], options: { queue: 'Default' } },
      400,
      'invalid_payload',
    ],
    [
      'queue my_queue!',
      { type: 'a.b', args: [], options: { queue: 'my_queue!' } },
      400,
      'invalid_payload',
    ],
    [
      'queue -invalid',
      { type: 'a.b', args: [], options: { queue: '-invalid' } },
      400,
      'invalid_payload',
    ],
    [
      'queue "my queue"',
      { type: 'a.b', args: [], options: { queue: 'my queue' } },
      400,
      'invalid_payload',
    ],
    [
      'UUIDv4 id',
      { id: '550e8400-e29b-41d4-a716-446655440000', type: 'a.b', args: [] },
      400,
      'invalid_payload',
    ],
    [
      'uppercase UUIDv7 id',
      { id: UNKNOWN_ID.toUpperCase(), type: 'a.b', args: [] },
      400,
      'invalid_payload',
    ],
    ['empty id', { id: '', type: 'a.b', args: [] }, 400, 'invalid_payload'],
    ['missing args', { type: 'a.b' }, 400, 'invalid_payload'],
    ['object args', { type: 'a.b', args: { a: 1 } }, 400, 'invalid_payload'],
    ['string args', { type: 'a.b', args: 'x' }, 400, 'invalid_payload'],
    ['number args', { type: 'a.b', args: 1 }, 400, 'invalid_payload'],
    ['boolean args', { type: 'a.b', args: true }, 400, 'invalid_payload'],
    ['null args', { type: 'a.b', args: null }, 400, 'invalid_payload'],
    ['string meta', { type: 'a.b', args: [], meta: 'x' }, 400, 'invalid_payload'],
    ['array meta', { type: 'a.b', args: [], meta: [] }, 400, 'invalid_payload'],
    [
      'meta > 64 KiB',
      { type: 'a.b', args: [], meta: { k: 'x'.repeat(65 * 1024) } },
      413,
      'metadata_too_large',
    ],
    ['priority 101', { type: 'a.b', args: [], options: { priority: 101 } }, 400, 'invalid_payload'],
    [
      'priority -101',
      { type: 'a.b', args: [], options: { priority: -101 } },
      400,
      'invalid_payload',
    ],
    [
      'priority 999999',
      { type: 'a.b', args: [], options: { priority: 999999 } },
      400,
      'invalid_payload',
    ],
    ['priority 1.5', { type: 'a.b', args: [], options: { priority: 1.5 } }, 400, 'invalid_payload'],
    [
      'retry max_attempts -1',
      { type: 'a.b', args: [], options: { retry: { max_attempts: -1 } } },
      422,
      'validation_error',
    ],
    [
      'retry backoff_coefficient 0.5',
      { type: 'a.b', args: [], options: { retry: { backoff_coefficient: 0.5 } } },
      422,
      'validation_error',
    ],
    [
      'scheduled_at without zone',
      { type: 'a.b', args: [], options: { scheduled_at: '2026-01-01T13:00:00' } },
      400,
      'invalid_payload',
    ],
    [
      'expires_at without zone',
      { type: 'a.b', args: [], options: { expires_at: '2099-01-01T00:00:00' } },
      400,
      'invalid_payload',
    ],
    ['timeout_ms 0', { type: 'a.b', args: [], options: { timeout_ms: 0 } }, 400, 'invalid_payload'],
    ['options not an object', { type: 'a.b', args: [], options: 'fast' }, 400, 'invalid_payload'],
    [
      'unique with an unknown key',
      { type: 'a.b', args: [], options: { unique: { keys: ['colour'] } } },
      400,
      'invalid_request',
    ],
    [
      'unique with an unknown state',
      { type: 'a.b', args: [], options: { unique: { states: ['running'] } } },
      400,
      'invalid_request',
    ],
    [
      'unique on_conflict reschedule',
      { type: 'a.b', args: [], options: { unique: { on_conflict: 'reschedule' } } },
      400,
      'invalid_request',
    ],
  ];
  for (const [label, body, status, code] of cases) {
    it(`${label} -> ${status} ${code}`, async () => {
      const error = await rejected(post('/ojs/v1/jobs', body), status, code);
      if (code === 'validation_error') {
        const field = Object.keys((body.options as { retry: Obj }).retry)[0]!;
        assert.ok(error.message.includes(field), error.message);
      }
    });
  }
});

describe('unknown ids -> 404 not_found', () => {
  const details = (error: Json, type = 'job') => {
    assert.equal(error.details?.resource_type, type);
    assert.equal(error.details?.resource_id, UNKNOWN_ID);
  };

  it('GET /ojs/v1/jobs/:id', async () => {
    details(await rejected(() => ctx.req('GET', `/ojs/v1/jobs/${UNKNOWN_ID}`), 404, 'not_found'));
  });

  it('DELETE /ojs/v1/jobs/:id', async () => {
    details(
      await rejected(() => ctx.req('DELETE', `/ojs/v1/jobs/${UNKNOWN_ID}`), 404, 'not_found'),
    );
  });

  it('POST /ojs/v1/jobs/:id/activate', async () => {
    details(await rejected(post(`/ojs/v1/jobs/${UNKNOWN_ID}/activate`, {}), 404, 'not_found'));
  });

  it('POST /ojs/v1/workers/ack', async () => {
    details(await rejected(post('/ojs/v1/workers/ack', { job_id: UNKNOWN_ID }), 404, 'not_found'));
  });

  it('POST /ojs/v1/workers/nack', async () => {
    details(
      await rejected(
        post('/ojs/v1/workers/nack', {
          job_id: UNKNOWN_ID,
          error: { code: 'handler_error', message: 'x' },
        }),
        404,
        'not_found',
      ),
    );
  });

  it('POST /ojs/v1/jobs/:id/ack and /nack (per-job forms)', async () => {
    await rejected(post(`/ojs/v1/jobs/${UNKNOWN_ID}/ack`, {}), 404, 'not_found');
    await rejected(post(`/ojs/v1/jobs/${UNKNOWN_ID}/nack`, {}), 404, 'not_found');
  });

  it('POST /ojs/v1/dead-letter/:id/retry and DELETE /ojs/v1/dead-letter/:id', async () => {
    details(
      await rejected(post(`/ojs/v1/dead-letter/${UNKNOWN_ID}/retry`, {}), 404, 'not_found'),
      'dead_letter_job',
    );
    details(
      await rejected(
        () => ctx.req('DELETE', `/ojs/v1/dead-letter/${UNKNOWN_ID}`),
        404,
        'not_found',
      ),
      'dead_letter_job',
    );
  });

  it('dead letter operations on a job that is not dead-lettered -> 404', async () => {
    await rejected(post(`/ojs/v1/dead-letter/${seed.completed.id}/retry`, {}), 404, 'not_found');
    await rejected(
      () => ctx.req('DELETE', `/ojs/v1/dead-letter/${seed.available.id}`),
      404,
      'not_found',
    );
  });

  it('an unknown route -> 404 not_found with the OJS headers', async () => {
    await rejected(() => ctx.req('GET', '/ojs/v1/nothing-here'), 404, 'not_found');
  });
});

describe('state conflicts -> 409 conflict', () => {
  for (const which of ['available', 'completed'] as const) {
    it(`ack of a ${which} job`, async () => {
      const job = seed[which];
      const error = await rejected(
        post('/ojs/v1/workers/ack', { job_id: job.id }),
        409,
        'conflict',
      );
      assert.equal(error.details?.current_state, which);
      assert.equal(error.details?.expected_state, 'active');
    });

    it(`nack of a ${which} job`, async () => {
      const job = seed[which];
      const error = await rejected(
        post('/ojs/v1/workers/nack', { job_id: job.id, error: { code: 'x', message: 'y' } }),
        409,
        'conflict',
      );
      assert.equal(error.details?.current_state, which);
    });
  }

  it('ack of a scheduled job', async () => {
    const job = await ctx.enqueue({ type: 'a.b', args: [], options: { scheduled_at: '+PT1H' } });
    await rejected(post('/ojs/v1/workers/ack', { job_id: job.id }), 409, 'conflict');
  });

  it('ack from a worker that does not hold the lease (w1 holds, w2 acks)', async () => {
    await rejected(
      post('/ojs/v1/workers/ack', { job_id: seed.active.id, worker_id: 'w2' }),
      409,
      'conflict',
    );
  });

  it('nack from a worker that does not hold the lease', async () => {
    await rejected(
      post('/ojs/v1/workers/nack', {
        job_id: seed.active.id,
        worker_id: 'w2',
        error: { code: 'handler_error', message: 'x' },
      }),
      409,
      'conflict',
    );
  });

  it('ack with a stale attempt after the lease moved to another worker', async () => {
    const job = await ctx.enqueue({
      type: 'a.b',
      args: [],
      options: { queue: 'lease', visibility_timeout_ms: 1000 },
    });
    const [first] = await ctx.fetch({ queues: ['lease'], worker_id: 'w1' });
    assert.equal(first.attempt, 1);
    ctx.clock.advance(1001);
    await ctx.engine.expireLeases();
    const [second] = await ctx.fetch({ queues: ['lease'], worker_id: 'w2' });
    assert.equal(second.id, job.id);
    assert.equal(second.attempt, 2);

    await rejected(
      post('/ojs/v1/workers/ack', { job_id: job.id, worker_id: 'w1', attempt: 1 }),
      409,
      'conflict',
    );
    await rejected(post('/ojs/v1/workers/ack', { job_id: job.id, attempt: 1 }), 409, 'conflict');
    await rejected(
      post('/ojs/v1/workers/ack', { job_id: job.id, worker_id: 'w1' }),
      409,
      'conflict',
    );
    await rejected(
      post('/ojs/v1/workers/nack', {
        job_id: job.id,
        attempt: 1,
        error: { code: 'handler_error', message: 'late' },
      }),
      409,
      'conflict',
    );
    const ok = await ctx.req('POST', '/ojs/v1/workers/ack', {
      job_id: job.id,
      worker_id: 'w2',
      attempt: 2,
    });
    assert.equal(ok.statusCode, 200);
  });

  it('cancel of a completed job', async () => {
    const error = await rejected(
      () => ctx.req('DELETE', `/ojs/v1/jobs/${seed.completed.id}`),
      409,
      'conflict',
    );
    assert.equal(error.details?.current_state, 'completed');
  });

  it('cancel of a cancelled job (second cancel)', async () => {
    const first = await ctx.req('DELETE', `/ojs/v1/jobs/${seed.available.id}`);
    assert.equal(first.statusCode, 200);
    await rejected(() => ctx.req('DELETE', `/ojs/v1/jobs/${seed.available.id}`), 409, 'conflict');
  });

  it('cancel of a discarded job', async () => {
    const job = await ctx.enqueue({ type: 'a.b', args: [], options: { queue: 'disc' } });
    await ctx.fetch({ queues: ['disc'] });
    const nack = await ctx.req('POST', '/ojs/v1/workers/nack', {
      job_id: job.id,
      error: { code: 'handler_error', message: 'x', retryable: false },
    });
    assert.equal(nack.json().state, 'discarded');
    await rejected(() => ctx.req('DELETE', `/ojs/v1/jobs/${job.id}`), 409, 'conflict');
  });

  it('ack after the active job was cancelled', async () => {
    const cancel = await ctx.req('DELETE', `/ojs/v1/jobs/${seed.active.id}`);
    assert.equal(cancel.statusCode, 200);
    await rejected(
      post('/ojs/v1/workers/ack', { job_id: seed.active.id, worker_id: 'w1' }),
      409,
      'conflict',
    );
  });

  it('activate of a job that is not pending', async () => {
    const error = await rejected(
      post(`/ojs/v1/jobs/${seed.available.id}/activate`, {}),
      409,
      'conflict',
    );
    assert.equal(error.details?.current_state, 'available');
  });

  it('dead letter retry of a job that is not discarded -> 404 (not in the DLQ)', async () => {
    await rejected(post(`/ojs/v1/dead-letter/${seed.active.id}/retry`, {}), 404, 'not_found');
  });
});

describe('duplicates -> 409 duplicate', () => {
  it('a client id that already exists', async () => {
    const error = await rejected(
      post('/ojs/v1/jobs', { id: seed.available.id, type: 'other.type', args: ['x'] }),
      409,
      'duplicate',
    );
    assert.equal(error.details?.existing_job_id, seed.available.id);
    const still = await ctx.req('GET', `/ojs/v1/jobs/${seed.available.id}`);
    assert.equal(still.json().job.type, 'seed.available');
  });

  it('a unique key held by a live job (on_conflict reject)', async () => {
    const body = {
      type: 'uniq.job',
      args: [1],
      options: { unique: { keys: ['type', 'args'], on_conflict: 'reject' } },
    };
    const first = await ctx.enqueue(body);
    const error = await rejected(post('/ojs/v1/jobs', body), 409, 'duplicate');
    assert.equal(error.details?.existing_job_id, first.id);
  });

  it('a batch containing an id that already exists stores nothing', async () => {
    await rejected(
      post('/ojs/v1/jobs/batch', {
        jobs: [
          { type: 'batch.a', args: [] },
          { id: seed.available.id, type: 'batch.b', args: [] },
        ],
      }),
      409,
      'duplicate',
    );
  });
});

describe('bad worker and batch requests', () => {
  it('fetch without queues -> 400 invalid_request', async () => {
    const error = await rejected(post('/ojs/v1/workers/fetch', {}), 400, 'invalid_request');
    assert.equal(error.details?.field, 'queues');
  });

  for (const [label, body] of [
    ['an empty queues array', { queues: [] }],
    ['queues as a string', { queues: 'default' }],
    ['queues with a non-string', { queues: [1] }],
    ['count 0', { queues: ['default'], count: 0 }],
    ['count 1.5', { queues: ['default'], count: 1.5 }],
    ['a non-string worker_id', { queues: ['default'], worker_id: 7 }],
  ] as const) {
    it(`fetch with ${label} -> 400 invalid_request`, async () => {
      await rejected(post('/ojs/v1/workers/fetch', body), 400, 'invalid_request');
    });
  }

  it('fetch with an invalid queue name -> 400', async () => {
    await rejected(post('/ojs/v1/workers/fetch', { queues: ['Bad Queue'] }), 400, null);
  });

  it('fetch with an invalid queue name -> code invalid_request', async () => {
    await rejected(
      post('/ojs/v1/workers/fetch', { queues: ['Bad Queue'] }),
      400,
      'invalid_request',
    );
  });

  it('ack without job_id -> 400 invalid_request', async () => {
    const error = await rejected(post('/ojs/v1/workers/ack', {}), 400, 'invalid_request');
    assert.equal(error.details?.field, 'job_id');
  });

  it('nack without job_id -> 400 invalid_request', async () => {
    await rejected(
      post('/ojs/v1/workers/nack', { error: { code: 'x', message: 'y' } }),
      400,
      'invalid_request',
    );
  });

  it('nack with a non-object error -> 400 invalid_request', async () => {
    await rejected(
      post('/ojs/v1/workers/nack', { job_id: seed.active.id, error: 'boom' }),
      400,
      'invalid_request',
    );
  });

  it('ack with attempt 0 -> 400 invalid_request', async () => {
    await rejected(
      post('/ojs/v1/workers/ack', { job_id: seed.active.id, attempt: 0 }),
      400,
      'invalid_request',
    );
  });

  it('heartbeat with non-string job ids -> 400 invalid_request', async () => {
    await rejected(
      post('/ojs/v1/workers/heartbeat', { worker_id: 'w1', active_jobs: [1, 2] }),
      400,
      'invalid_request',
    );
  });

  it('batch with one invalid job (missing type) -> 400, nothing stored', async () => {
    const error = await rejected(
      post('/ojs/v1/jobs/batch', {
        jobs: [{ type: 'batch.ok', args: [1] }, { args: [2] }, { type: 'batch.ok', args: [3] }],
      }),
      400,
      'invalid_payload',
    );
    assert.equal(error.details?.index, 1);
    assert.match(error.message, /jobs\[1\]/);
    const fetched = await ctx.fetch({ queues: ['default'], count: 10 });
    assert.deepEqual(
      fetched.map((j: Json) => j.id),
      [seed.available.id],
      'only the seeded job is fetchable',
    );
  });

  it('batch with one job failing retry validation -> 422, nothing stored', async () => {
    await rejected(
      post('/ojs/v1/jobs/batch', {
        jobs: [
          { type: 'batch.ok', args: [] },
          { type: 'batch.ok', args: [], options: { retry: { max_attempts: -1 } } },
        ],
      }),
      422,
      'validation_error',
    );
  });

  for (const [label, body] of [
    ['an empty jobs array', { jobs: [] }],
    ['no jobs field', {}],
    ['jobs as an object', { jobs: { type: 'a.b', args: [] } }],
  ] as const) {
    it(`batch with ${label} -> 400 invalid_payload`, async () => {
      await rejected(post('/ojs/v1/jobs/batch', body), 400, 'invalid_payload');
    });
  }
});

describe('request ids', () => {
  it('a sane client X-Request-Id is echoed in the header and the error body', async () => {
    const res = await ctx.req('GET', `/ojs/v1/jobs/${UNKNOWN_ID}`, undefined, {
      'x-request-id': 'client-req-42',
    });
    const error = assertError(res, 404, 'not_found');
    assert.equal(error.request_id, 'client-req-42');
  });

  it('an unsafe client X-Request-Id is replaced by a generated one', async () => {
    const res = await ctx.req('GET', `/ojs/v1/jobs/${UNKNOWN_ID}`, undefined, {
      'x-request-id': 'bad id with spaces <script>',
    });
    const error = assertError(res, 404, 'not_found');
    assert.match(error.request_id, /^req_/);
  });

  it('each request gets a distinct generated id', async () => {
    const a = await ctx.req('GET', `/ojs/v1/jobs/${UNKNOWN_ID}`);
    const b = await ctx.req('GET', `/ojs/v1/jobs/${UNKNOWN_ID}`);
    assert.notEqual(a.headers['x-request-id'], b.headers['x-request-id']);
  });
});
