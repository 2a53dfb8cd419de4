/**
 * WebSocket subscriptions (http-binding §9.3, RT §3) over a real connection
 * on every store: subscribe to a queue, a job, all events (and EV's
 * `events` alias), events pushed in order, unknown job, unsubscribe, resume.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { type LiveServer, startLiveServer, storeKinds } from './stores.ts';

type Message = Record<string, unknown>;

/** A WebSocket client whose messages are awaited one by one. */
class Client {
  readonly socket: WebSocket;
  readonly #messages: Message[] = [];
  #waiter: (() => void) | undefined;

  private constructor(socket: WebSocket) {
    this.socket = socket;
    socket.addEventListener('message', (event) => {
      this.#messages.push(JSON.parse(String(event.data)) as Message);
      this.#waiter?.();
    });
  }

  static async connect(url: string): Promise<Client> {
    const socket = new WebSocket(`${url.replace(/^http/, 'ws')}/ojs/v1/ws`, 'ojs.v1');
    await new Promise((resolve, reject) => {
      socket.addEventListener('open', resolve, { once: true });
      socket.addEventListener('error', reject, { once: true });
    });
    return new Client(socket);
  }

  send(message: Message): void {
    this.socket.send(JSON.stringify(message));
  }

  async next(): Promise<Message> {
    while (this.#messages.length === 0) {
      await new Promise<void>((resolve) => {
        this.#waiter = resolve;
      });
    }
    return this.#messages.shift()!;
  }

  close(): void {
    this.socket.close();
  }
}

async function post(url: string, path: string, body: unknown): Promise<Message> {
  const res = await fetch(`${url}${path}`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify(body),
  });
  const json = (await res.json()) as Message;
  assert.ok(res.ok, `${path}: ${res.status} ${JSON.stringify(json)}`);
  return json;
}

async function runOneJob(url: string, queue: string): Promise<string> {
  const { job } = (await post(url, '/ojs/v1/jobs', {
    type: 'ws.work',
    args: [],
    options: { queue },
  })) as {
    job: { id: string };
  };
  await post(url, '/ojs/v1/workers/fetch', { queues: [queue], worker_id: 'w' });
  await post(url, '/ojs/v1/workers/ack', { job_id: job.id, worker_id: 'w' });
  return job.id;
}

for (const kind of await storeKinds()) {
  describe(`WebSocket subscriptions (${kind})`, { timeout: 30_000 }, () => {
    let server: LiveServer;
    before(async () => {
      server = await startLiveServer(kind, { testMode: true });
    });
    after(() => server.close());

    it('uses the ojs.v1 subprotocol; a queue channel gets its events in order', async () => {
      await runOneJob(server.url, 'ws-q'); // the queue exists
      const client = await Client.connect(server.url);
      try {
        assert.equal(client.socket.protocol, 'ojs.v1');
        client.send({ action: 'subscribe', channel: 'queue:ws-q' });
        const ack = await client.next();
        assert.equal(ack.type, 'subscribed');
        assert.equal(ack.channel, 'queue:ws-q');
        assert.match(String(ack.subscription_id), /^sub_/);
        const id = await runOneJob(server.url, 'ws-q');
        const pushed = [await client.next(), await client.next(), await client.next()];
        assert.deepEqual(
          pushed.map((m) => [m.type, m.channel, m.event]),
          [
            ['event', 'queue:ws-q', 'job.enqueued'],
            ['event', 'queue:ws-q', 'job.started'],
            ['event', 'queue:ws-q', 'job.completed'],
          ],
        );
        for (const m of pushed) {
          assert.equal((m.data as Message).subject, id);
          assert.equal(m.id, (m.data as Message).id);
        }
        client.send({ action: 'unsubscribe', channel: 'queue:ws-q' });
        assert.deepEqual(await client.next(), {
          type: 'unsubscribed',
          action: 'unsubscribed',
          channel: 'queue:ws-q',
        });
      } finally {
        client.close();
      }
    });

    it('job channel with event_types; EV `events` alias with a filter; errors', async () => {
      const client = await Client.connect(server.url);
      try {
        const { job } = (await post(server.url, '/ojs/v1/jobs', {
          type: 'ws.work',
          args: [],
          options: { queue: 'ws-job' },
        })) as { job: { id: string } };
        client.send({
          action: 'subscribe',
          channel: `job:${job.id}`,
          event_types: ['job.completed'],
        });
        assert.deepEqual((await client.next()).event_types, ['job.completed']);
        client.send({
          action: 'subscribe',
          channel: 'events',
          filter: { event_types: ['job.started'], queues: ['ws-job'] },
        });
        assert.equal((await client.next()).channel, 'all');
        await post(server.url, '/ojs/v1/workers/fetch', { queues: ['ws-job'], worker_id: 'w' });
        const started = await client.next();
        assert.deepEqual([started.channel, started.event], ['all', 'job.started']);
        await post(server.url, '/ojs/v1/workers/ack', { job_id: job.id, worker_id: 'w' });
        const completed = await client.next();
        assert.deepEqual([completed.channel, completed.event], [`job:${job.id}`, 'job.completed']);
        client.send({ action: 'subscribe', channel: 'job:019a0000-0000-7000-8000-000000000000' });
        assert.equal((await client.next()).code, 'not_found');
        client.send({ action: 'dance' });
        assert.equal((await client.next()).code, 'invalid_request');
        client.socket.send('not json');
        assert.equal((await client.next()).code, 'invalid_request');
      } finally {
        client.close();
      }
    });

    it('a plain GET (no Upgrade) gets an OJS error body, not a bare 404', async () => {
      const res = await fetch(`${server.url}/ojs/v1/ws`);
      assert.equal(res.status, 400);
      assert.equal(res.headers.get('content-type'), 'application/openjobspec+json');
      assert.equal(
        ((await res.json()) as { error: { code: string } }).error.code,
        'invalid_request',
      );
    });

    it('resume replays every channel after the given event', async () => {
      await runOneJob(server.url, 'ws-resume');
      const client = await Client.connect(server.url);
      try {
        client.send({ action: 'subscribe', channel: 'queue:ws-resume' });
        await client.next();
        await runOneJob(server.url, 'ws-resume');
        const first = [await client.next(), await client.next(), await client.next()];
        client.send({ action: 'resume', last_event_id: first[0]!.id });
        const replayed = [await client.next(), await client.next()];
        assert.deepEqual(
          replayed.map((m) => m.id),
          [first[1]!.id, first[2]!.id],
        );
        client.send({
          action: 'resume',
          last_event_id: 'evt_01890000-0000-7000-8000-000000000000',
        });
        assert.equal((await client.next()).code, 'unknown_event_id');
      } finally {
        client.close();
      }
    });
  });
}
