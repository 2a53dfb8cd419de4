/**
 * Shared fixture of the HTTP tests: an in-memory SQLite store, an Engine on
 * a ManualClock (background services never started, so time only moves
 * when a test moves it) and the Fastify app driven through inject().
 */
import assert from 'node:assert/strict';
import { ManualClock } from '@ojs/core';
import { Engine } from '@ojs/engine';
import { SqliteStore } from '@ojs/store-sqlite';
import type { FastifyInstance, InjectOptions, LightMyRequestResponse } from 'fastify';
import { buildApp } from '../src/app.ts';

export const OJS_MEDIA_TYPE = 'application/openjobspec+json';
export const T0 = Date.UTC(2026, 0, 1, 12, 0, 0);

type Obj = Record<string, unknown>;
// biome-ignore lint/suspicious/noExplicitAny: JSON bodies are read dynamically in assertions.
export type Json = any;

export interface Ctx {
  store: SqliteStore;
  clock: ManualClock;
  engine: Engine;
  app: FastifyInstance;
  close(): Promise<void>;
  /** JSON request; `payload` objects are sent as application/json. */
  req(
    method: InjectOptions['method'],
    url: string,
    payload?: unknown,
    headers?: Record<string, string>,
  ): Promise<LightMyRequestResponse>;
  enqueue(body: Obj): Promise<Json>;
  fetch(body: Obj): Promise<Json[]>;
}

export async function setup(
  options: {
    testMode?: boolean;
    engineTestMode?: boolean;
    bodyLimit?: number;
    requireFencing?: boolean;
  } = {},
): Promise<Ctx> {
  // As the server runs it (stores.ts): kept records frozen under test, so a route changing one fails.
  const store = new SqliteStore({ path: ':memory:', recordsReadOnly: true });
  await store.init();
  const clock = new ManualClock(T0);
  const engine = new Engine({
    store,
    clock,
    testMode: options.engineTestMode ?? options.testMode ?? true,
    // Jitter factor exactly 1.0: backoff delays are deterministic.
    random: () => 0.5,
    requireFencing: options.requireFencing ?? false,
  });
  const config: { testMode: boolean; bodyLimit?: number } = {
    testMode: options.testMode ?? true,
  };
  if (options.bodyLimit !== undefined) config.bodyLimit = options.bodyLimit;
  const app = await buildApp(config, engine);
  const req: Ctx['req'] = (method, url, payload, headers = {}) => {
    const opts: InjectOptions = { method, url, headers: { ...headers } };
    if (payload !== undefined) {
      if (typeof payload === 'string') opts.payload = payload;
      else {
        opts.payload = JSON.stringify(payload);
        opts.headers = { 'content-type': 'application/json', ...headers };
      }
    }
    return app.inject(opts);
  };
  return {
    store,
    clock,
    engine,
    app,
    req,
    async close() {
      await app.close();
      await engine.stop();
      await store.close();
    },
    async enqueue(body) {
      const res = await req('POST', '/ojs/v1/jobs', body);
      assert.equal(res.statusCode, 201, res.body);
      return res.json().job;
    },
    async fetch(body) {
      const res = await req('POST', '/ojs/v1/workers/fetch', body);
      assert.equal(res.statusCode, 200, res.body);
      return res.json().jobs;
    },
  };
}

/**
 * Everything observable in the store: every event, every queue with its
 * per-state counts, and the full record (rev included) of every job an
 * event mentions. Any write shows up in at least one of these.
 */
export async function snapshot(engine: Engine): Promise<string> {
  const events = await engine.listEvents({ limit: 1_000_000 });
  const queues = await engine.store.listQueues();
  const stats = [];
  for (const q of queues) {
    const s = await engine.store.queueStats(q.name, engine.now());
    stats.push({ name: s.name, paused: s.paused, counts: s.counts });
  }
  const ids = [
    ...new Set(
      events.map((e) => e.data.job_id).filter((id): id is string => typeof id === 'string'),
    ),
  ].sort();
  const jobs = [];
  for (const id of ids) jobs.push(await engine.store.getJob(id));
  return JSON.stringify({ events, queues, stats, jobs });
}

/** The wire rules every response follows (exact media type, version header, request id). */
export function assertWireHeaders(res: LightMyRequestResponse): void {
  assert.equal(res.headers['content-type'], OJS_MEDIA_TYPE);
  assert.equal(res.headers['ojs-version'], '1.0');
  assert.equal(typeof res.headers['x-request-id'], 'string');
  assert.ok((res.headers['x-request-id'] as string).length > 0);
}

/** An HB §16.1 error body with the given status and code. Returns `error`. */
export function assertError(
  res: LightMyRequestResponse,
  status: number,
  code: string | null,
  retryable = false,
): Json {
  assert.equal(res.statusCode, status, res.body);
  assertWireHeaders(res);
  const body = res.json();
  assert.equal(typeof body.error, 'object', res.body);
  if (code !== null) {
    assert.equal(body.error.code, code, res.body);
    assert.equal(body.error.type, code);
  } else {
    assert.equal(typeof body.error.code, 'string');
  }
  assert.equal(typeof body.error.message, 'string');
  assert.ok(body.error.message.length > 0);
  assert.equal(body.error.retryable, retryable);
  assert.equal(typeof body.error.hint, 'string');
  assert.equal(typeof body.error.docs_url, 'string');
  assert.equal(body.error.request_id, res.headers['x-request-id']);
  return body.error;
}

/** POST /ojs/v1/workflows answered 201 with its Location: the workflow. */
export async function createWorkflowOk(ctx: Ctx, body: Obj): Promise<Json> {
  const res = await ctx.req('POST', '/ojs/v1/workflows', body);
  assert.equal(res.statusCode, 201, res.body);
  assertWireHeaders(res);
  const { workflow } = res.json();
  assert.equal(res.headers.location, `/ojs/v1/workflows/${workflow.id}`);
  return workflow;
}

/** GET /ojs/v1/workflows/:id answered 200: the workflow. */
export async function getWorkflowOk(ctx: Ctx, id: string): Promise<Json> {
  const res = await ctx.req('GET', `/ojs/v1/workflows/${id}`);
  assert.equal(res.statusCode, 200, res.body);
  return res.json().workflow;
}
