/**
 * Live event streams (Server-Sent Events, http-binding §9.3) over real HTTP
 * on every store: the all-events stream with the list's filters, one job's
 * stream, one queue's stream, resumption with Last-Event-ID, 404s, the
 * shutdown notice; and, on the shared stores (PostgreSQL, Redis), a stream
 * read from one server process while jobs move on another.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { type ServerProcess, startServerProcess } from '../../../scripts/lib.ts';
import { SseReader } from './sse.ts';
import { type LiveServer, startLiveServer, storeKinds } from './stores.ts';

async function post(url: string, path: string, body: unknown): Promise<Record<string, unknown>> {
  const res = await fetch(`${url}${path}`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify(body),
  });
  const json = (await res.json()) as Record<string, unknown>;
  assert.ok(res.ok, `${path}: ${res.status} ${JSON.stringify(json)}`);
  return json;
}

/** Enqueue, fetch and ACK one job of `queue` on the server at `url`; returns its id. */
async function runOneJob(url: string, queue: string, type = 'sse.work'): Promise<string> {
  const { job } = (await post(url, '/ojs/v1/jobs', { type, args: [1], options: { queue } })) as {
    job: { id: string };
  };
  const fetched = (await post(url, '/ojs/v1/workers/fetch', {
    queues: [queue],
    worker_id: 'w',
  })) as {
    jobs: { id: string; attempt: number }[];
  };
  assert.equal(fetched.jobs[0]?.id, job.id);
  await post(url, '/ojs/v1/workers/ack', { job_id: job.id, worker_id: 'w', attempt: 1 });
  return job.id;
}

for (const kind of await storeKinds()) {
  describe(`event streams (${kind})`, () => {
    let server: LiveServer;
    before(async () => {
      server = await startLiveServer(kind, { testMode: true });
    });
    after(() => server.close());

    it('GET /ojs/v1/events streams every event live, in order, with ids, and resumes from Last-Event-ID', async () => {
      const stream = await SseReader.open(`${server.url}/ojs/v1/events?queues=sse-all`);
      try {
        assert.equal(stream.response.status, 200);
        assert.equal(stream.response.headers.get('content-type'), 'text/event-stream');
        assert.ok(stream.response.headers.get('x-request-id'));
        assert.equal((await stream.next())?.retry, 3000);
        const id = await runOneJob(server.url, 'sse-all');
        const seen = [];
        for (let i = 0; i < 3; i++) seen.push((await stream.nextEvent())!);
        assert.deepEqual(
          seen.map((f) => f.event),
          ['job.enqueued', 'job.started', 'job.completed'],
        );
        for (const frame of seen) {
          assert.equal(frame.json.subject, id);
          assert.equal(frame.id, frame.json.id);
          assert.equal((frame.json.data as { queue: string }).queue, 'sse-all');
        }
        // Resume after the first: the two that followed are replayed at once.
        const resumed = await SseReader.open(`${server.url}/ojs/v1/events?queues=sse-all`, {
          'last-event-id': seen[0]!.id!,
        });
        try {
          assert.equal((await resumed.nextEvent())?.id, seen[1]!.id);
          assert.equal((await resumed.nextEvent())?.id, seen[2]!.id);
        } finally {
          resumed.close();
        }
      } finally {
        stream.close();
      }
    });

    it('a Last-Event-ID no longer in the log: system.gap, then from now (no replay)', async () => {
      await runOneJob(server.url, 'sse-gap'); // events exist
      const stream = await SseReader.open(`${server.url}/ojs/v1/events?queues=sse-gap`, {
        'last-event-id': 'evt_01890000-0000-7000-8000-000000000000',
      });
      try {
        await stream.next(); // retry:
        const gap = await stream.nextEvent();
        assert.equal(gap?.event, 'system.gap');
        assert.equal(gap?.json.gap_start, 'evt_01890000-0000-7000-8000-000000000000');
        const id = await runOneJob(server.url, 'sse-gap');
        const next = await stream.nextEvent();
        assert.deepEqual([next?.event, next?.json.subject], ['job.enqueued', id]);
      } finally {
        stream.close();
      }
    });

    it('applies the list filters: types', async () => {
      const stream = await SseReader.open(
        `${server.url}/ojs/v1/events?types=job.completed&queues=sse-filter`,
      );
      try {
        await stream.next(); // retry:
        const first = await runOneJob(server.url, 'sse-filter');
        const second = await runOneJob(server.url, 'sse-filter');
        const a = await stream.nextEvent();
        const b = await stream.nextEvent();
        assert.deepEqual(
          [a?.event, a?.json.subject, b?.event, b?.json.subject],
          ['job.completed', first, 'job.completed', second],
        );
      } finally {
        stream.close();
      }
    });

    it('GET /ojs/v1/jobs/{id}/events: a snapshot, then only that job; a finished job closes the stream', async () => {
      const { job } = (await post(server.url, '/ojs/v1/jobs', {
        type: 'sse.work',
        args: [],
        options: { queue: 'sse-job' },
      })) as { job: { id: string } };
      const stream = await SseReader.open(`${server.url}/ojs/v1/jobs/${job.id}/events`);
      try {
        await stream.next(); // retry:
        const snapshot = await stream.nextEvent();
        assert.equal(snapshot?.event, 'job.state_changed');
        assert.equal(snapshot?.json.job_id, job.id);
        assert.equal(snapshot?.json.to, 'available');
        // Its id is the last log event before it (the job's enqueue): resuming from it is exact.
        const { events } = (await (
          await fetch(`${server.url}/ojs/v1/events?queues=sse-job`)
        ).json()) as { events: { id: string; subject: string }[] };
        assert.equal(snapshot?.id, events.at(-1)?.id);
        assert.equal(events.at(-1)?.subject, job.id);
        const fetched = (await post(server.url, '/ojs/v1/workers/fetch', {
          queues: ['sse-job'],
          worker_id: 'w',
        })) as { jobs: { id: string }[] };
        assert.equal(fetched.jobs[0]?.id, job.id);
        // Another job of the same queue runs meanwhile: not this stream's.
        await runOneJob(server.url, 'sse-job', 'sse.other');
        await post(server.url, '/ojs/v1/workers/ack', { job_id: job.id, worker_id: 'w' });
        const started = await stream.nextEvent();
        const completed = await stream.nextEvent();
        assert.deepEqual(
          [started?.event, started?.json.subject, completed?.event, completed?.json.subject],
          ['job.started', job.id, 'job.completed', job.id],
        );
        assert.equal(await stream.next(), undefined, 'the stream ends once the job finished');
      } finally {
        stream.close();
      }
      const finished = await SseReader.open(`${server.url}/ojs/v1/jobs/${job.id}/events`);
      await finished.next(); // retry:
      const last = await finished.nextEvent();
      assert.equal(last?.json.to, 'completed');
      assert.equal(await finished.next(), undefined, 'the stream of a finished job ends');
    });

    it('GET /ojs/v1/queues/{name}/events streams that queue only', async () => {
      await runOneJob(server.url, 'sse-q1'); // the queue exists now
      const stream = await SseReader.open(`${server.url}/ojs/v1/queues/sse-q1/events`);
      try {
        await stream.next();
        await runOneJob(server.url, 'sse-q2');
        const id = await runOneJob(server.url, 'sse-q1');
        const frame = await stream.nextEvent();
        assert.equal(frame?.event, 'job.enqueued');
        assert.equal(frame?.json.subject, id);
      } finally {
        stream.close();
      }
    });

    it('a client that goes away stops its follower', async () => {
      // The previous tests' streams are closed, but their followers stop
      // asynchronously: a busy machine may not have stopped them yet.
      for (let i = 0; i < 200 && server.engine.events.following > 0; i++) {
        await new Promise((resolve) => setTimeout(resolve, 10));
      }
      assert.equal(server.engine.events.following, 0);
      const stream = await SseReader.open(`${server.url}/ojs/v1/events?queues=sse-leave`);
      await stream.next(); // retry:
      // The follower starts right after the headers; wait for it (bounded).
      for (let i = 0; i < 200 && server.engine.events.following === 0; i++) {
        await new Promise((resolve) => setTimeout(resolve, 10));
      }
      assert.equal(server.engine.events.following, 1);
      stream.close();
      for (let i = 0; i < 200 && server.engine.events.following > 0; i++) {
        await new Promise((resolve) => setTimeout(resolve, 10));
      }
      assert.equal(server.engine.events.following, 0);
    });

    it('unknown job or queue: 404 with the OJS error body, not a stream', async () => {
      for (const path of [
        '/ojs/v1/jobs/019a0000-0000-7000-8000-000000000000/events',
        '/ojs/v1/queues/never-seen/events',
      ]) {
        const res = await fetch(`${server.url}${path}`, {
          headers: { accept: 'text/event-stream' },
        });
        assert.equal(res.status, 404, path);
        assert.equal(((await res.json()) as { error: { code: string } }).error.code, 'not_found');
      }
    });
  });
}

describe('event streams end with server.shutdown when the server closes', () => {
  it('sends the notice and ends the stream', async () => {
    const server = await startLiveServer('sqlite', { testMode: true });
    const stream = await SseReader.open(`${server.url}/ojs/v1/events`);
    await stream.next(); // retry:
    const closing = server.close();
    const notice = await stream.nextEvent();
    assert.equal(notice?.event, 'server.shutdown');
    assert.equal(await stream.next(), undefined);
    await closing;
  });
});

for (const kind of (await storeKinds()).filter((k) => k !== 'sqlite')) {
  describe(`event streams across server processes (${kind})`, () => {
    let reader: LiveServer;
    let mover: ServerProcess;
    before(async () => {
      reader = await startLiveServer(kind, {});
      // Process 1: `ojs serve` in a child process on the same schema.
      mover = await startServerProcess(reader.store, { OJS_LOG_LEVEL: 'warn' });
    });
    after(async () => {
      await mover.stop();
      await reader.close();
    });

    it('process 2 streams the events of jobs that move on process 1', async () => {
      const stream = await SseReader.open(`${reader.url}/ojs/v1/events?queues=sse-cross`);
      try {
        await stream.next();
        const ids = [];
        for (let i = 0; i < 5; i++) ids.push(await runOneJob(mover.url, 'sse-cross'));
        const frames = [];
        for (let i = 0; i < 15; i++) frames.push((await stream.nextEvent())!);
        for (const [n, id] of ids.entries()) {
          assert.deepEqual(
            frames.filter((f) => f.json.subject === id).map((f) => f.event),
            ['job.enqueued', 'job.started', 'job.completed'],
            `job ${n}`,
          );
        }
        assert.equal(new Set(frames.map((f) => f.id)).size, 15, 'each event once');
      } finally {
        stream.close();
      }
    });
  });
}
