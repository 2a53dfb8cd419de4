/**
 * The operations API over HTTP: job listing and search with cursors, the
 * admin extension (stats, queues, job detail, bulk actions with confirm,
 * workers with quiet / terminate), the dead-letter extension paths,
 * progress, queue configuration with backpressure and default retry,
 * rate-limit inspection, draining, and the retention pruner. In-memory
 * SQLite and a ManualClock (helpers.ts); background services never run, so
 * the pruner's tick is called directly.
 */
import assert from 'node:assert/strict';
import { afterEach, beforeEach, describe, it } from 'node:test';
import { assertError, type Ctx, type Json, setup, T0 } from './helpers.ts';

const DAY = 24 * 3600 * 1000;

let ctx: Ctx;
beforeEach(async () => {
  ctx = await setup();
});
afterEach(async () => {
  await ctx.close();
});

async function json(
  method: 'GET' | 'POST' | 'PUT' | 'DELETE',
  url: string,
  body?: unknown,
  status = 200,
): Promise<Json> {
  const res = await ctx.req(method, url, body);
  assert.equal(res.statusCode, status, `${method} ${url}: ${res.body}`);
  return res.body === '' ? undefined : res.json();
}

/** A job failed with max_attempts 1 into the dead letter queue. */
async function deadLetter(queue: string, type = 'dlq.job'): Promise<Json> {
  const job = await ctx.enqueue({
    type,
    args: [],
    // Highest priority: fetched before whatever else waits in the queue.
    options: { queue, priority: 100, retry: { max_attempts: 1, on_exhaustion: 'dead_letter' } },
  });
  const [taken] = await ctx.fetch({ queues: [queue], worker_id: 'w1' });
  assert.equal(taken.id, job.id);
  await json('POST', '/ojs/v1/workers/nack', {
    job_id: job.id,
    error: { code: 'handler_error', type: 'SmtpError', message: 'down' },
  });
  return job;
}

describe('job listing and search', () => {
  it('lists jobs newest first with filters, and pages with a cursor that survives new jobs', async () => {
    const ids: string[] = [];
    for (let i = 0; i < 5; i++) {
      ids.push(
        (
          await ctx.enqueue({
            type: i < 3 ? 'email.send' : 'report.build',
            args: [i],
            options: { queue: 'q1' },
          })
        ).id,
      );
    }
    await ctx.enqueue({ type: 'email.send', args: [], options: { queue: 'q2' } });

    const first = await json('GET', '/ojs/v1/jobs?queue=q1&limit=2');
    assert.deepEqual(
      first.jobs.map((j: Json) => j.id),
      [ids[4], ids[3]],
    );
    assert.equal(first.pagination.total, 5);
    assert.equal(first.pagination.has_more, true);
    await ctx.enqueue({ type: 'email.send', args: [], options: { queue: 'q1' } });
    const second = await json(
      'GET',
      `/ojs/v1/jobs?queue=q1&limit=2&cursor=${first.pagination.next_cursor}`,
    );
    assert.deepEqual(
      second.jobs.map((j: Json) => j.id),
      [ids[2], ids[1]],
    );

    const emails = await json(
      'GET',
      '/ojs/v1/jobs?type=email.*&queue=q1&state=available&order=asc',
    );
    assert.deepEqual(
      emails.jobs.slice(0, 3).map((j: Json) => j.id),
      ids.slice(0, 3),
    );
    const admin = await json('GET', '/ojs/v1/admin/jobs?type=report.build&per_page=1&page=2');
    assert.deepEqual(
      admin.items.map((j: Json) => j.id),
      [ids[3]],
    );
    assert.deepEqual(
      {
        total: admin.pagination.total,
        page: admin.pagination.page,
        per_page: admin.pagination.per_page,
      },
      { total: 2, page: 2, per_page: 1 },
    );
  });

  it('refuses bad filters and foreign cursors with a 400', async () => {
    assertError(await ctx.req('GET', '/ojs/v1/jobs?state=done'), 400, 'invalid_request');
    assertError(await ctx.req('GET', '/ojs/v1/jobs?since=yesterday'), 400, 'invalid_request');
    assertError(await ctx.req('GET', '/ojs/v1/jobs?cursor=bm9wZQ'), 400, 'invalid_request');
    assertError(await ctx.req('GET', '/ojs/v1/admin/jobs?sort=priority'), 400, 'invalid_request');
  });
});

describe('admin API', () => {
  it('stats, queues with counts, queue detail and job detail with its attempts', async () => {
    const job = await ctx.enqueue({
      type: 'a.b',
      args: [],
      options: { queue: 'adm', retry: { max_attempts: 3 } },
    });
    await ctx.enqueue({ type: 'a.b', args: [], options: { queue: 'adm' } });
    const [taken] = await ctx.fetch({ queues: ['adm'], worker_id: 'w1' });
    assert.equal(taken.id, job.id);
    await json('POST', '/ojs/v1/workers/nack', { job_id: job.id, error: { message: 'boom' } });

    const stats = await json('GET', '/ojs/v1/admin/stats');
    assert.equal(stats.jobs.available, 1);
    assert.equal(stats.jobs.retryable, 1);
    assert.equal(typeof stats.throughput.processed_per_minute, 'number');
    const queues = await json('GET', '/ojs/v1/admin/queues');
    const adm = queues.items.find((q: Json) => q.name === 'adm');
    assert.deepEqual([adm.counts.available, adm.counts.retryable, adm.state], [1, 1, 'active']);
    assert.ok(queues.pagination.total >= 1);
    const detail = await json('GET', `/ojs/v1/admin/jobs/${job.id}`);
    assert.equal(detail.id, job.id);
    assert.equal(detail.state, 'retryable');
    assert.equal(detail.attempts.length, 1);
    assert.equal(detail.attempts[0].outcome, 'failed');
    assert.equal(detail.attempts[0].error.message, 'boom');
    const queue = await json('GET', '/ojs/v1/admin/queues/adm');
    assert.equal(queue.depth, 2);
    assert.equal(queue.configuration.retention.completed, 'P7D');
  });

  it('pause and resume answer the paused flag; FETCH gets nothing while paused', async () => {
    await ctx.enqueue({ type: 'a.b', args: [], options: { queue: 'pz' } });
    assert.equal((await json('POST', '/ojs/v1/admin/queues/pz/pause')).paused, true);
    assert.deepEqual(await ctx.fetch({ queues: ['pz'] }), []);
    assert.equal((await json('POST', '/ojs/v1/admin/queues/pz/resume')).paused, false);
    assert.equal((await ctx.fetch({ queues: ['pz'] })).length, 1);
  });

  it('bulk actions need confirm: true, and report matched / succeeded / failed', async () => {
    for (const confirm of [undefined, false, 'yes']) {
      const res = await ctx.req('POST', '/ojs/v1/admin/jobs/bulk/retry', {
        filter: { state: 'discarded' },
        confirm,
      });
      assertError(res, 400, 'invalid_request');
    }
    assertError(
      await ctx.req('POST', '/ojs/v1/admin/jobs/bulk/cancel', {
        filter: { stat: 'available' },
        confirm: true,
      }),
      400,
      'invalid_request',
    );
    for (let i = 0; i < 3; i++)
      await ctx.enqueue({ type: 'bulk.job', args: [i], options: { queue: 'bk' } });
    await deadLetter('bk');
    const cancelled = await json('POST', '/ojs/v1/admin/jobs/bulk/cancel', {
      filter: { queue: 'bk' },
      confirm: true,
    });
    assert.deepEqual(
      [cancelled.action, cancelled.matched, cancelled.succeeded, cancelled.failed],
      ['cancel', 4, 3, 1],
      'the discarded job cannot be cancelled',
    );
    assert.equal(cancelled.errors[0].error.code, 'conflict');
    const retried = await json('POST', '/ojs/v1/admin/jobs/bulk/retry', {
      filter: { queue: 'bk', state: 'cancelled,discarded' },
      confirm: true,
    });
    assert.deepEqual([retried.matched, retried.succeeded, retried.failed], [4, 4, 0]);
    const listed = await json('GET', '/ojs/v1/jobs?queue=bk&state=available');
    assert.equal(listed.pagination.total, 4);
    const [job] = await ctx.fetch({ queues: ['bk'] });
    await json('POST', '/ojs/v1/workers/ack', { job_id: job.id });
    const deleted = await json('POST', '/ojs/v1/admin/jobs/bulk/delete', {
      filter: { queue: 'bk' },
      confirm: true,
    });
    assert.deepEqual([deleted.matched, deleted.succeeded, deleted.failed], [4, 1, 3]);
    await json('GET', `/ojs/v1/jobs/${job.id}`, undefined, 404);
  });

  it('single job retry, cancel and delete', async () => {
    const job = await ctx.enqueue({ type: 'one.job', args: [] });
    assert.equal(
      (await json('POST', `/ojs/v1/admin/jobs/${job.id}/cancel`)).job.state,
      'cancelled',
    );
    assert.equal((await json('POST', `/ojs/v1/admin/jobs/${job.id}/retry`)).job.state, 'available');
    assertError(await ctx.req('DELETE', `/ojs/v1/admin/jobs/${job.id}`), 409, 'conflict');
    await json('POST', `/ojs/v1/admin/jobs/${job.id}/cancel`);
    await json('DELETE', `/ojs/v1/admin/jobs/${job.id}`, undefined, 204);
    assertError(await ctx.req('GET', `/ojs/v1/admin/jobs/${job.id}`), 404, 'not_found');
  });

  it('workers: listed from heartbeats, told to go quiet, then get no jobs', async () => {
    const job = await ctx.enqueue({ type: 'w.job', args: [], options: { queue: 'wq' } });
    const [taken] = await ctx.fetch({ queues: ['wq'], worker_id: 'w-7' });
    const beat = await json('POST', '/ojs/v1/workers/heartbeat', {
      worker_id: 'w-7',
      active_jobs: [taken.id],
      hostname: 'host-a',
      queues: ['wq'],
      concurrency: 4,
    });
    assert.equal(beat.state, 'running');
    const workers = await json('GET', '/ojs/v1/admin/workers');
    assert.equal(workers.summary.total, 1);
    const worker = workers.items[0];
    assert.deepEqual(
      [worker.id, worker.hostname, worker.state, worker.active_jobs, worker.concurrency],
      ['w-7', 'host-a', 'running', 1, 4],
    );
    assert.equal(worker.last_heartbeat_at, new Date(T0).toISOString());

    assert.equal((await json('POST', '/ojs/v1/admin/workers/w-7/quiet')).directive, 'quiet');
    const told = await json('POST', '/ojs/v1/workers/heartbeat', {
      worker_id: 'w-7',
      active_jobs: [job.id],
    });
    assert.equal(told.state, 'quiet');
    await ctx.enqueue({ type: 'w.job', args: [], options: { queue: 'wq' } });
    assert.deepEqual(await ctx.fetch({ queues: ['wq'], worker_id: 'w-7' }), []);
    assert.equal((await ctx.fetch({ queues: ['wq'], worker_id: 'w-8' })).length, 1);
    await json('POST', '/ojs/v1/admin/workers/w-7/terminate');
    assert.equal(
      (await json('POST', '/ojs/v1/workers/heartbeat', { worker_id: 'w-7' })).state,
      'terminate',
    );
    assertError(await ctx.req('POST', '/ojs/v1/admin/workers/ghost/quiet'), 404, 'not_found');

    ctx.clock.advance(31_000);
    assert.equal((await json('GET', '/ojs/v1/admin/workers/w-7')).state, 'stale');
  });

  it('a worker reporting drain on /workers/beat gets no new jobs (graceful shutdown)', async () => {
    await ctx.enqueue({ type: 'gs.job', args: [], options: { queue: 'gs' } });
    const ack = await json('POST', '/ojs/v1/workers/beat', {
      worker_id: 'w-d',
      state: 'drain',
      active_jobs: 2,
    });
    assert.equal(ack.acknowledged, true);
    assert.deepEqual(await ctx.fetch({ queues: ['gs'], worker_id: 'w-d' }), []);
    assert.equal((await json('GET', '/ojs/v1/admin/workers/w-d')).active_jobs, 2);
    assertError(
      await ctx.req('POST', '/ojs/v1/workers/beat', { worker_id: 'w-d', state: 'sleepy' }),
      400,
      'invalid_request',
    );
  });
});

describe('dead letter extension', () => {
  it('lists, shows, counts, retries, deletes and purges with confirm', async () => {
    const a = await deadLetter('dq', 'mail.send');
    const b = await deadLetter('dq', 'mail.send');
    const c = await deadLetter('other', 'report.build');
    const list = await json('GET', '/ojs/v1/admin/dead-letter?queue=dq');
    assert.deepEqual(
      list.items.map((j: Json) => j.id),
      [b.id, a.id],
    );
    assert.equal(list.pagination.total, 2);
    assert.equal(list.pagination.page, 1);
    assert.equal(
      (await json('GET', `/ojs/v1/admin/dead-letter/${a.id}`)).job.errors[0].type,
      'SmtpError',
    );
    assert.equal(
      (await json('GET', '/ojs/v1/admin/dead-letter?error_type=SmtpError')).pagination.total,
      3,
    );
    const stats = await json('GET', '/ojs/v1/admin/dead-letter/stats');
    assert.deepEqual(stats, { total: 3, by_queue: { dq: 2, other: 1 } });

    const one = await json('POST', `/ojs/v1/admin/dead-letter/${a.id}/retry`);
    assert.deepEqual([one.job.state, one.job.attempt], ['available', 0]);
    assertError(
      await ctx.req('POST', '/ojs/v1/admin/dead-letter/retry', { filter: {} }),
      400,
      'invalid_request',
    );
    const bulk = await json('POST', '/ojs/v1/admin/dead-letter/retry', {
      filter: { queue: 'dq' },
      confirm: true,
    });
    assert.deepEqual([bulk.retried, bulk.matched, bulk.failed], [1, 1, 0]);
    await json('DELETE', `/ojs/v1/admin/dead-letter/${c.id}`, undefined, 204);
    assertError(await ctx.req('DELETE', `/ojs/v1/admin/dead-letter/${c.id}`), 404, 'not_found');

    await deadLetter('purge');
    assertError(await ctx.req('DELETE', '/ojs/v1/dead-letter', {}), 400, 'invalid_request');
    ctx.clock.advance(2 * DAY);
    const kept = await deadLetter('purge');
    const purged = await json('DELETE', '/ojs/v1/dead-letter', {
      older_than: 'P1D',
      confirm: true,
    });
    assert.equal(purged.purged_count, 1);
    assert.deepEqual(
      (await json('GET', '/ojs/v1/admin/dead-letter')).items.map((j: Json) => j.id),
      [kept.id],
    );
  });
});

describe('progress', () => {
  it('is clamped, monotonic, kept on the job, read back, and ignored once the job is done', async () => {
    const job = await ctx.enqueue({ type: 'p.job', args: [] });
    assert.equal((await json('GET', `/ojs/v1/jobs/${job.id}/progress`)).progress, null);
    await ctx.fetch({ queues: ['default'], worker_id: 'w1' });
    const put = await json('PUT', `/ojs/v1/jobs/${job.id}/progress`, {
      progress: 1.7,
      message: 'over',
    });
    assert.equal(put.progress, 1);
    await json('PUT', `/ojs/v1/jobs/${job.id}/progress`, { progress: 0.2, message: 'lower' });
    const read = await json('GET', `/ojs/v1/jobs/${job.id}/progress`);
    assert.deepEqual([read.progress, read.message], [1, 'lower']);
    assert.equal((await json('GET', `/ojs/v1/jobs/${job.id}`)).job.progress.value, 1);
    const events = await json('GET', '/ojs/v1/events?types=job.progress');
    assert.equal(events.events.length, 2);

    await json('POST', '/ojs/v1/workers/ack', { job_id: job.id });
    const after = await json('PUT', `/ojs/v1/jobs/${job.id}/progress`, { progress: 0.5 });
    assert.deepEqual([after.state, after.progress], ['completed', 1]);
    assertError(
      await ctx.req('PUT', `/ojs/v1/jobs/${job.id}/progress`, { progress: 'half' }),
      400,
      'invalid_request',
    );
    assertError(
      await ctx.req('PUT', '/ojs/v1/jobs/nope/progress', { progress: 0.1 }),
      404,
      'not_found',
    );
  });

  it('extends the lease like a heartbeat', async () => {
    const job = await ctx.enqueue({
      type: 'p.job',
      args: [],
      options: { visibility_timeout_ms: 10_000 },
    });
    await ctx.fetch({ queues: ['default'], worker_id: 'w1' });
    ctx.clock.advance(8_000);
    await json('PUT', `/ojs/v1/jobs/${job.id}/progress`, { progress: 0.5 });
    ctx.clock.advance(8_000);
    assert.equal(await ctx.engine.expireLeases(), 0, 'the lease was extended at 8 s');
  });
});

describe('queue configuration and backpressure', () => {
  it('rejects over the bound with 429 queue_full and the headers, warns above the threshold', async () => {
    const config = await json('PUT', '/ojs/v1/admin/queues/bp/config', {
      backpressure: { max_depth: 3, warning_threshold: 0.5 },
      concurrency: 2,
      rate_limit: { limit: 10, period: 'PT1M' },
      retention: { completed: 'PT1H' },
    });
    assert.deepEqual(config.configuration.rate_limit, { limit: 10, period: 'PT1M' });
    assert.equal(config.configuration.concurrency, 2);
    assert.equal(config.configuration.retention.completed, 'PT1H');
    const first = await ctx.req('POST', '/ojs/v1/jobs', {
      type: 'bp.job',
      args: [],
      options: { queue: 'bp' },
    });
    assert.equal(first.headers['x-ojs-queue-pressure'], undefined);
    const second = await ctx.req('POST', '/ojs/v1/jobs', {
      type: 'bp.job',
      args: [],
      options: { queue: 'bp' },
    });
    assert.equal(second.headers['x-ojs-queue-pressure'], '0.667');
    const batch = await ctx.req('POST', '/ojs/v1/jobs/batch', {
      jobs: [1, 2].map((n) => ({ type: 'bp.job', args: [n], options: { queue: 'bp' } })),
    });
    const error = assertError(batch, 429, 'QUEUE_FULL', true);
    assert.deepEqual([error.details.depth, error.details.bound], [2, 3]);
    assert.equal(batch.headers['retry-after'], '1');
    assert.equal(batch.headers['x-ojs-queue-depth'], '2');
    assert.equal(batch.headers['x-ojs-queue-bound'], '3');
    await ctx.enqueue({ type: 'bp.job', args: [], options: { queue: 'bp' } });
    assertError(
      await ctx.req('POST', '/ojs/v1/jobs', { type: 'bp.job', args: [], options: { queue: 'bp' } }),
      429,
      'QUEUE_FULL',
      true,
    );
    const events = await json('GET', '/ojs/v1/events?types=backpressure.rejected');
    assert.equal(events.events.length, 2);
    assert.equal((await json('GET', '/ojs/v1/queues/bp/stats')).stats.depth, 3);
  });

  it('push-many: the items of a queue that does not fit get QUEUE_FULL, the others are stored', async () => {
    await json('PUT', '/ojs/v1/admin/queues/bpm/config', { backpressure: { max_depth: 1 } });
    await json('PUT', '/ojs/v1/admin/queues/dflt/config', { default_retry: { max_attempts: 9 } });
    const many = await json('POST', '/ojs/v1/jobs/many', {
      jobs: [
        { type: 'm.job', args: [1], options: { queue: 'bpm' } },
        { type: 'm.job', args: [2], options: { queue: 'dflt' } },
        { type: 'm.job', args: [3], options: { queue: 'bpm' } },
      ],
    });
    assert.deepEqual(
      many.results.map((r: Json) => [r.status, r.error?.code ?? r.job.max_attempts]),
      [
        [429, 'QUEUE_FULL'],
        [201, 9],
        [429, 'QUEUE_FULL'],
      ],
    );
    assert.equal((await json('GET', '/ojs/v1/jobs?queue=bpm')).pagination.total, 0);
  });

  it('validates the configuration and points out unknown fields', async () => {
    for (const body of [
      { backpressure: { max_depth: -1 } },
      { backpressure: { strategy: 'drop_oldest' } },
      { retention: { finished: 'P1D' } },
      { retention: { completed: 'soon' } },
      { concurency: 3 },
      { rate_limit: { limit: 0, period: 'PT1S' } },
    ]) {
      assertError(
        await ctx.req('PUT', '/ojs/v1/admin/queues/cfg/config', body),
        400,
        'invalid_request',
      );
    }
    assert.equal(
      (await json('GET', '/ojs/v1/admin/queues/cfg/config')).configuration.backpressure,
      null,
    );
  });

  it('applies a queue default retry policy to jobs that set none', async () => {
    await json('PUT', '/ojs/v1/queues/dr/config', { default_retry: { max_attempts: 7 } });
    const plain = await ctx.enqueue({ type: 'dr.job', args: [], options: { queue: 'dr' } });
    const own = await ctx.enqueue({
      type: 'dr.job',
      args: [],
      options: { queue: 'dr', retry: { max_attempts: 2 } },
    });
    assert.equal(plain.max_attempts, 7);
    assert.equal(own.max_attempts, 2);
  });
});

describe('visible queue state', () => {
  it('shows limits in use, and an empty fetch explains itself when asked', async () => {
    await json('PUT', '/ojs/v1/admin/queues/vs/config', {
      concurrency: 1,
      rate_limit: { limit: 2, period: 'PT1M' },
    });
    const empty = await json('POST', '/ojs/v1/workers/fetch', { queues: ['vs'], explain: true });
    assert.deepEqual(empty.why_empty.queues[0].blocked_by, ['empty']);
    for (let i = 0; i < 3; i++)
      await ctx.enqueue({ type: 'vs.job', args: [i], options: { queue: 'vs' } });
    assert.equal((await ctx.fetch({ queues: ['vs'], count: 3 })).length, 1);
    const state = await json('GET', '/ojs/v1/admin/queues/vs/state');
    assert.deepEqual(state.concurrency, { limit: 1, active: 1 });
    assert.deepEqual([state.rate_limit.window_count, state.rate_limit.limit], [1, 2]);
    assert.deepEqual(state.blocked_by, ['concurrency_limit']);
    await json('POST', '/ojs/v1/admin/queues/vs/pause');
    const why = await json('POST', '/ojs/v1/workers/fetch', {
      queues: ['vs'],
      explain: true,
      worker_id: 'w',
    });
    assert.deepEqual(why.why_empty.queues[0].blocked_by, ['paused', 'concurrency_limit']);
    assert.deepEqual(why.why_empty.reasons, []);
    ctx.engine.beginDrain();
    const draining = await json('POST', '/ojs/v1/workers/fetch', { queues: ['vs'], explain: true });
    assert.deepEqual(draining.why_empty.reasons, ['server_draining']);
    const plain = await json('POST', '/ojs/v1/workers/fetch', { queues: ['vs'] });
    assert.deepEqual(plain, { jobs: [] }, 'no explanation unless asked');
  });
});

describe('rate-limit inspection', () => {
  it('shows a key: concurrency use, window and waiting jobs', async () => {
    const limit = { key: 'api-x', concurrency: 1, rate: { limit: 5, period: 'PT1M' } };
    for (let i = 0; i < 3; i++)
      await ctx.enqueue({ type: 'rl.job', args: [i], options: { queue: 'rl', rate_limit: limit } });
    assert.equal((await ctx.fetch({ queues: ['rl'], count: 3 })).length, 1);
    const state = await json('GET', '/ojs/v1/rate-limits/api-x');
    assert.deepEqual(state.concurrency, { limit: 1, active: 1, available: 0 });
    assert.deepEqual([state.rate.limit, state.rate.current_count], [5, 1]);
    assert.equal(state.waiting_count, 2);
    assertError(await ctx.req('GET', '/ojs/v1/rate-limits/%20bad'), 400, 'invalid_request');
  });
});

describe('draining and retention', () => {
  it('a draining server reports it in health and hands out no jobs; ACK still works', async () => {
    const job = await ctx.enqueue({ type: 'd.job', args: [] });
    await ctx.enqueue({ type: 'd.job', args: [] });
    await ctx.fetch({ queues: ['default'] });
    ctx.engine.beginDrain();
    const health = await ctx.req('GET', '/ojs/v1/health');
    assert.equal(health.statusCode, 503);
    assert.equal(health.json().status, 'draining');
    assert.deepEqual(await ctx.fetch({ queues: ['default'] }), []);
    assert.equal(
      (await json('POST', '/ojs/v1/workers/ack', { job_id: job.id })).state,
      'completed',
    );
  });

  it('the pruner deletes finished jobs past their retention, per queue', async () => {
    await json('PUT', '/ojs/v1/admin/queues/short/config', { retention: { completed: 'PT1H' } });
    const done = async (queue: string) => {
      const job = await ctx.enqueue({ type: 'r.job', args: [], options: { queue } });
      await ctx.fetch({ queues: [queue] });
      await json('POST', '/ojs/v1/workers/ack', { job_id: job.id });
      return job;
    };
    const short = await done('short');
    const normal = await done('normal');
    ctx.clock.advance(2 * 3600 * 1000);
    assert.equal(await ctx.engine.retention.tick(), 1);
    await json('GET', `/ojs/v1/jobs/${short.id}`, undefined, 404);
    await json('GET', `/ojs/v1/jobs/${normal.id}`);
    ctx.clock.advance(8 * DAY);
    assert.equal(await ctx.engine.retention.tick(), 1, 'default: completed jobs kept 7 days');
    await json('GET', `/ojs/v1/jobs/${normal.id}`, undefined, 404);
    const dead = await deadLetter('normal');
    ctx.clock.advance(179 * DAY);
    assert.equal(await ctx.engine.retention.tick(), 0, 'dead letters are kept 180 days');
    ctx.clock.advance(2 * DAY);
    assert.equal(await ctx.engine.retention.tick(), 1);
    await json('GET', `/ojs/v1/jobs/${dead.id}`, undefined, 404);
    const pruned = await json('GET', '/ojs/v1/events?types=dead_letter.pruned');
    assert.deepEqual(
      pruned.events.map((e: Json) => e.data.count),
      [1],
    );
  });
});
