/**
 * What a strictly typed client in another language decodes: every response
 * of a session that touches each endpoint family (manifest, health, jobs,
 * batch, fetch, ACK/NACK, heartbeat, queues, dead letter, workflows of every
 * form, events, and errors) is checked against the shapes the specification
 * publishes (wire-schemas.ts). A field sent with another type than declared
 * (e.g. `backend.latency_ms` as a fraction) fails here.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { Ajv, type ValidateFunction } from 'ajv';
import type { InjectOptions, LightMyRequestResponse } from 'fastify';
import { type Ctx, type Json, setup } from './helpers.ts';
import * as shapes from './wire-schemas.ts';

const ajv = new Ajv({ allErrors: true, strict: true, strictRequired: false });
const validators = Object.fromEntries(
  Object.entries(shapes).map(([name, schema]) => [name, ajv.compile(schema)]),
) as Record<keyof typeof shapes, ValidateFunction>;

type ShapeName = keyof typeof shapes;

/** Which published shape a successful response of each route has. */
const ROUTES: [InjectOptions['method'], RegExp, ShapeName][] = [
  ['GET', /^\/ojs\/manifest$/, 'manifest'],
  ['GET', /^\/ojs\/v1\/health$/, 'health'],
  ['POST', /^\/ojs\/v1\/jobs$/, 'wrappedJob'],
  ['POST', /^\/ojs\/v1\/jobs\/batch$/, 'batch'],
  ['GET', /^\/ojs\/v1\/jobs\/[^/]+$/, 'wrappedJob'],
  ['DELETE', /^\/ojs\/v1\/jobs\/[^/]+$/, 'wrappedJob'],
  ['POST', /^\/ojs\/v1\/jobs\/[^/]+\/activate$/, 'wrappedJob'],
  ['POST', /^\/ojs\/v1\/workers\/fetch$/, 'fetch'],
  ['POST', /^\/ojs\/v1\/workers\/(ack|nack)$/, 'settlement'],
  ['POST', /^\/ojs\/v1\/workers\/heartbeat$/, 'heartbeat'],
  ['GET', /^\/ojs\/v1\/queues$/, 'queues'],
  ['GET', /^\/ojs\/v1\/dead-letter$/, 'deadLetter'],
  ['POST', /^\/ojs\/v1\/dead-letter\/[^/]+\/retry$/, 'wrappedJob'],
  ['POST', /^\/ojs\/v1\/workflows$/, 'workflow'],
  ['GET', /^\/ojs\/v1\/workflows\/[^/]+$/, 'workflow'],
  ['DELETE', /^\/ojs\/v1\/workflows\/[^/]+$/, 'workflow'],
  ['GET', /^\/ojs\/v1\/events(\?.*)?$/, 'events'],
  ['GET', /^\/ojs\/v1\/queues\/[^/]+\/stats$/, 'queueStats'],
  ['POST', /^\/ojs\/v1\/queues\/[^/]+\/(pause|resume)$/, 'queuePaused'],
  ['DELETE', /^\/ojs\/v1\/dead-letter\/[^/]+$/, 'deadLetterDeleted'],
  ['POST', /^\/ojs\/v1\/cron$/, 'cron'],
  ['GET', /^\/ojs\/v1\/cron$/, 'crons'],
  ['GET', /^\/ojs\/v1\/cron\/[^/]+$/, 'cron'],
  ['DELETE', /^\/ojs\/v1\/cron\/[^/]+$/, 'cron'],
];

describe('every response decodes against the published shapes', () => {
  let ctx: Ctx;
  const decoded = new Map<ShapeName, number>();

  before(async () => {
    ctx = await setup();
  });
  after(() => ctx.close());

  /** Sends a request and decodes the response as a typed client would. */
  async function call(
    method: InjectOptions['method'],
    url: string,
    payload?: unknown,
  ): Promise<Json> {
    const res: LightMyRequestResponse = await ctx.req(method, url, payload);
    const path = url.split('?')[0]!;
    const shape: ShapeName | undefined =
      res.statusCode >= 400
        ? 'errorEnvelope'
        : ROUTES.find(([m, pattern]) => m === method && pattern.test(path))?.[2];
    assert.ok(shape !== undefined, `no published shape for ${method} ${path}`);
    const body = res.json();
    const validate = validators[shape];
    assert.ok(
      validate(body),
      `${method} ${url} (${res.statusCode}) is not a valid ${shape}: ${ajv.errorsText(validate.errors)}\n${res.body}`,
    );
    decoded.set(shape, (decoded.get(shape) ?? 0) + 1);
    return body;
  }

  it('manifest and health (latency_ms an integer)', async () => {
    await call('GET', '/ojs/manifest');
    const health = await call('GET', '/ojs/v1/health');
    assert.ok(Number.isInteger(health.backend.latency_ms));
  });

  it('jobs, batch, fetch, ACK, NACK, heartbeat, cancel, activate, dead letter, events', async () => {
    const { job } = await call('POST', '/ojs/v1/jobs', {
      type: 'wire.check',
      args: [1, 'two', { three: 3 }],
      meta: { trace_id: 't' },
      options: {
        queue: 'wire',
        priority: 3,
        timeout_ms: 5000,
        tags: ['x'],
        retry: { max_attempts: 1, initial_interval: 'PT1S' },
        expires_at: '2026-01-02T00:00:00Z',
      },
    });
    await call('POST', '/ojs/v1/jobs/batch', {
      jobs: [
        { type: 'wire.check', args: [], options: { queue: 'wire' } },
        { type: 'wire.check', args: [], options: { queue: 'wire', pending: true } },
      ],
    });
    await call('GET', `/ojs/v1/jobs/${job.id}`);
    const fetched = await call('POST', '/ojs/v1/workers/fetch', {
      queues: ['wire'],
      count: 2,
      worker_id: 'w1',
    });
    await call('POST', '/ojs/v1/workers/heartbeat', {
      worker_id: 'w1',
      active_jobs: fetched.jobs.map((j: Json) => j.id),
    });
    await call('POST', '/ojs/v1/workers/ack', { job_id: fetched.jobs[0].id, result: { ok: 1 } });
    const nacked = await call('POST', '/ojs/v1/workers/nack', {
      job_id: fetched.jobs[1].id,
      error: { code: 'handler_error', message: 'no', retryable: false },
    });
    assert.equal(nacked.state, 'discarded');
    await call('POST', '/ojs/v1/workers/fetch', { queues: ['empty'] });
    const { job: pending } = await call('POST', '/ojs/v1/jobs', {
      type: 'wire.check',
      args: [],
      options: {
        queue: 'wire',
        pending: true,
        retry: { max_attempts: 1, on_exhaustion: 'dead_letter' },
      },
    });
    await call('POST', `/ojs/v1/jobs/${pending.id}/activate`);
    const [dead] = (await call('POST', '/ojs/v1/workers/fetch', { queues: ['wire'], count: 5 }))
      .jobs;
    await call('POST', '/ojs/v1/workers/nack', {
      job_id: dead.id,
      error: { code: 'handler_error', message: 'dead', retryable: false },
    });
    const letters = await call('GET', '/ojs/v1/dead-letter');
    if (letters.jobs.length > 0)
      await call('POST', `/ojs/v1/dead-letter/${letters.jobs[0].id}/retry`);
    const { job: toCancel } = await call('POST', '/ojs/v1/jobs', { type: 'wire.check', args: [] });
    await call('DELETE', `/ojs/v1/jobs/${toCancel.id}`);
    await call('GET', '/ojs/v1/queues');
    await call('GET', '/ojs/v1/events?limit=500');
  });

  it('queues (stats, pause, resume), cron, dead letter delete', async () => {
    await call('POST', '/ojs/v1/jobs', { type: 'wire.check', args: [], options: { queue: 'wq' } });
    await call('GET', '/ojs/v1/queues/wq/stats');
    await call('POST', '/ojs/v1/queues/wq/pause');
    await call('POST', '/ojs/v1/queues/wq/resume');
    await call('POST', '/ojs/v1/cron', {
      name: 'wire-nightly',
      expression: '0 3 * * *',
      timezone: 'Europe/Paris',
      job_template: { type: 'wire.check', args: [] },
    });
    await call('GET', '/ojs/v1/cron');
    await call('GET', '/ojs/v1/cron/wire-nightly');
    await call('DELETE', '/ojs/v1/cron/wire-nightly');
    await call('DELETE', '/ojs/v1/cron/wire-nightly');
    const { job } = await call('POST', '/ojs/v1/jobs', {
      type: 'wire.check',
      args: [],
      options: { queue: 'wdead', retry: { max_attempts: 1, on_exhaustion: 'dead_letter' } },
    });
    const [fetched] = (await call('POST', '/ojs/v1/workers/fetch', { queues: ['wdead'] })).jobs;
    assert.equal(fetched.id, job.id);
    await call('POST', '/ojs/v1/workers/nack', {
      job_id: job.id,
      error: { code: 'handler_error', message: 'dead', retryable: false },
    });
    await call('DELETE', `/ojs/v1/dead-letter/${job.id}`);
    await call('DELETE', `/ojs/v1/dead-letter/${job.id}`);
  });

  it('workflows: chain, group, batch and graph, created, read and cancelled', async () => {
    const ids: string[] = [];
    for (const body of [
      { type: 'chain', name: 'c', steps: [{ type: 'wf.step', args: [] }] },
      { type: 'group', name: 'g', jobs: [{ type: 'wf.step', args: [] }] },
      {
        type: 'batch',
        name: 'b',
        jobs: [{ type: 'wf.step', args: [] }],
        callbacks: { on_complete: { type: 'wf.done', args: [] } },
      },
      {
        name: 'graph',
        steps: [
          { id: 'a', type: 'wf.step', args: [], depends_on: [] },
          { id: 'b', type: 'wf.step', args: [], depends_on: ['a'] },
        ],
      },
    ]) {
      ids.push((await call('POST', '/ojs/v1/workflows', body)).workflow.id);
    }
    const [first] = (await call('POST', '/ojs/v1/workers/fetch', { queues: ['default'], count: 4 }))
      .jobs;
    await call('POST', '/ojs/v1/workers/ack', { job_id: first.id, result: 1 });
    for (const id of ids) await call('GET', `/ojs/v1/workflows/${id}`);
    for (const id of ids) await call('DELETE', `/ojs/v1/workflows/${id}`);
  });

  it('errors: not found, invalid payload, conflict, invalid workflow', async () => {
    await call('GET', '/ojs/v1/jobs/019539a4-0000-7000-8000-000000000000');
    await call('GET', '/ojs/v1/workflows/019539a4-0000-7000-8000-000000000000');
    await call('POST', '/ojs/v1/jobs', { type: 'Bad Type', args: [] });
    await call('POST', '/ojs/v1/workers/fetch', {});
    await call('POST', '/ojs/v1/workflows', {
      name: 'cycle',
      steps: [
        { id: 'a', type: 'x.y', args: [], depends_on: ['b'] },
        { id: 'b', type: 'x.y', args: [], depends_on: ['a'] },
      ],
    });
    const { job } = await call('POST', '/ojs/v1/jobs', { type: 'x.y', args: [] });
    await call('POST', '/ojs/v1/workers/ack', { job_id: job.id });
  });

  it('covered every shape named in the issue', () => {
    for (const shape of [
      'health',
      'manifest',
      'wrappedJob',
      'workflow',
      'errorEnvelope',
      'fetch',
      'batch',
      'settlement',
      'heartbeat',
      'events',
      'queueStats',
      'queuePaused',
      'cron',
      'crons',
      'deadLetterDeleted',
    ] as const) {
      assert.ok((decoded.get(shape) ?? 0) > 0, `no response decoded as ${shape}`);
    }
  });
});
