/**
 * Multi-tenancy on the live event streams (SSE and WebSocket): a tenant's
 * stream carries only its jobs' events, and another tenant's job stream is
 * not found. The events are awaited one by one (no sleeps): the other
 * tenant's event is written first, so a stream that leaked it would show
 * it before the own tenant's.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { WebSocket } from 'ws';
import { SseReader } from './sse.ts';
import { type LiveServer, startLiveServer } from './stores.ts';

type Message = Record<string, unknown>;

describe('multi-tenancy on event streams', () => {
  let server: LiveServer;
  before(async () => {
    server = await startLiveServer('sqlite', { testMode: true });
  });
  after(async () => server?.close());

  const enqueue = async (tenant: string, queue: string) => {
    const res = await fetch(`${server.url}/ojs/v1/jobs`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'x-ojs-tenant': tenant },
      body: JSON.stringify({ type: 'mt.stream', args: [], options: { queue } }),
    });
    assert.equal(res.status, 201);
    return ((await res.json()) as { job: { id: string } }).job.id;
  };

  it("SSE: a tenant's stream shows its jobs' events only; another tenant's job stream is 404", async () => {
    const stream = await SseReader.open(`${server.url}/ojs/v1/events`, { 'x-ojs-tenant': 'sse-a' });
    try {
      await enqueue('sse-b', 'sse-q');
      const own = await enqueue('sse-a', 'sse-q');
      const event = await stream.nextEvent();
      assert.equal(event?.json.subject, own);
      assert.equal((event!.json.data as Message).tenant_id, 'sse-a');
    } finally {
      stream.close();
    }
    const foreign = await enqueue('sse-b', 'sse-q');
    const jobStream = await fetch(`${server.url}/ojs/v1/jobs/${foreign}/events`, {
      headers: { accept: 'text/event-stream', 'x-ojs-tenant': 'sse-a' },
    });
    assert.equal(jobStream.status, 404);
  });

  it("WebSocket: a tenant's subscription shows its jobs' events only; another tenant's job channel is not found", async () => {
    const socket = new WebSocket(`${server.url.replace(/^http/, 'ws')}/ojs/v1/ws`, 'ojs.v1', {
      headers: { 'x-ojs-tenant': 'ws-a' },
    });
    const messages: Message[] = [];
    let wake: (() => void) | undefined;
    socket.on('message', (data) => {
      messages.push(JSON.parse(String(data)) as Message);
      wake?.();
    });
    const next = async (): Promise<Message> => {
      while (messages.length === 0) await new Promise<void>((resolve) => (wake = resolve));
      return messages.shift()!;
    };
    await new Promise((resolve, reject) => {
      socket.once('open', resolve);
      socket.once('error', reject);
    });
    try {
      const foreign = await enqueue('ws-b', 'ws-q');
      socket.send(JSON.stringify({ action: 'subscribe', channel: `job:${foreign}` }));
      const refused = await next();
      assert.equal(refused.type, 'error');
      assert.equal(refused.code, 'not_found');
      socket.send(JSON.stringify({ action: 'subscribe', channel: 'all' }));
      assert.equal((await next()).type, 'subscribed');
      await enqueue('ws-b', 'ws-q');
      const own = await enqueue('ws-a', 'ws-q');
      const event = await next();
      assert.equal((event.data as Message).subject, own, JSON.stringify(event));
      assert.equal(((event.data as Message).data as Message).tenant_id, 'ws-a');
    } finally {
      socket.close();
    }
  });
});
