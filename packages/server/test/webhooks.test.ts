/**
 * Webhooks end to end (ext-webhooks) on every store, with a real receiver
 * on loopback (the servers allow private targets and http: for it):
 * delivery through failures (every third request answered 500, every
 * seventh socket dropped), signatures, headers, the delivery log and
 * replay, rotation, tenancy, and the SSRF guard of a server without the
 * operator flags.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { type LiveServer, type StoreKind, startLiveServer, storeKinds } from './stores.ts';
import { startReceiver } from './webhook-receiver.ts';

// biome-ignore lint/suspicious/noExplicitAny: JSON bodies are read dynamically in assertions.
type Json = any;

/** Short delays and many attempts: every delivery gets through the receiver's failures. */
const FAST_SCHEDULE = [0, ...Array<number>(19).fill(20)];
const SECRET = 'whsec_test_secret_0001';

async function call(
  server: LiveServer,
  method: string,
  path: string,
  body?: unknown,
  headers: Record<string, string> = {},
): Promise<{ status: number; body: Json }> {
  const res = await fetch(`${server.url}${path}`, {
    method,
    headers: body === undefined ? headers : { 'content-type': 'application/json', ...headers },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  const text = await res.text();
  return { status: res.status, body: text === '' ? null : JSON.parse(text) };
}

async function eventually<T>(
  read: () => Promise<T>,
  ok: (v: T) => boolean,
  what: string,
): Promise<T> {
  const deadline = Date.now() + 30_000;
  for (;;) {
    const value = await read();
    if (ok(value)) return value;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

const kinds = await storeKinds();

for (const kind of kinds) {
  describe(`webhooks on ${kind}`, () => {
    let server: LiveServer;
    before(async () => {
      server = await startLiveServer(kind as StoreKind, {
        webhooksAllowPrivate: true,
        webhooksAllowHttp: true,
        webhooksRetrySchedule: FAST_SCHEDULE,
      });
    });
    after(() => server.close());

    it('1,000 events reach a receiver that fails every third request and drops every seventh socket: each delivery arrives, every signature verifies', async () => {
      const receiver = await startReceiver(
        () => [SECRET],
        (n) => (n % 7 === 0 ? 'destroy' : n % 3 === 0 ? 500 : 200),
      );
      try {
        const created = await call(server, 'POST', '/ojs/v1/webhooks/subscriptions', {
          url: receiver.url,
          events: ['job.enqueued'],
          filter: { queues: ['wh-load'] },
          secret: SECRET,
        });
        assert.equal(created.status, 201);
        const subId: string = created.body.subscription.id;
        const bodies = Array.from({ length: 1000 }, (_, i) => ({
          type: 'wh.load',
          queue: 'wh-load',
          args: [i],
        }));
        const jobIds = new Set<string>();
        for (let i = 0; i < bodies.length; i += 250) {
          for (const outcome of await server.engine.enqueueMany(bodies.slice(i, i + 250))) {
            assert.equal(outcome.status, 'created');
            if (outcome.status === 'created') jobIds.add(outcome.job.id);
          }
        }
        // Not part of the subscription's filter: never delivered.
        await server.engine.enqueue({ type: 'wh.other', queue: 'elsewhere', args: [] });
        await receiver.until(() => receiver.acknowledged.size >= 1000, 120_000, '1,000 deliveries');

        assert.ok(
          receiver.received.every((r) => r.verified),
          'every signature verifies',
        );
        const byDelivery = new Map<string, string>();
        const delivered = new Set<string>();
        for (const r of receiver.received) {
          assert.equal(r.headers['content-type'], 'application/json');
          assert.match(String(r.headers['user-agent']), /^OJS-Webhook\//);
          assert.equal(r.headers['x-ojs-event-type'], 'job.enqueued');
          assert.equal(r.headers['x-ojs-subscription-id'], subId);
          const event = JSON.parse(r.body);
          assert.equal(event.type, 'job.enqueued');
          assert.equal(event.data.queue, 'wh-load');
          const id = String(r.headers['x-ojs-delivery-id']);
          // Stable per (event, subscription): every attempt of a delivery carries the same event.
          assert.equal(byDelivery.get(id) ?? event.id, event.id);
          byDelivery.set(id, event.id);
          if (receiver.acknowledged.has(id)) delivered.add(event.data.job_id);
        }
        assert.deepEqual([...delivered].sort(), [...jobIds].sort());
        assert.ok(receiver.received.length > 1000, 'the failures were retried');

        // The log agrees: all delivered, some after more than one attempt.
        const log = await eventually(
          async () => {
            const all: Json[] = [];
            let cursor: string | null = null;
            do {
              const page: Json = await call(
                server,
                'GET',
                `/ojs/v1/webhooks/deliveries?subscription_id=${subId}&limit=500${cursor ? `&cursor=${cursor}` : ''}`,
              );
              assert.equal(page.status, 200);
              all.push(...page.body.deliveries);
              cursor = page.body.next_cursor;
            } while (cursor !== null);
            return all;
          },
          (all) => all.length === 1000 && all.every((d) => d.state === 'delivered'),
          'the delivery log to settle',
        );
        assert.ok(log.some((d) => d.attempts > 1));
        const one = await call(server, 'GET', `/ojs/v1/webhooks/deliveries/${log[0].id}`);
        assert.equal(one.body.delivery.id, log[0].id);
        assert.equal(one.body.delivery.last_status_code, 200);
        // Outcome events are recorded, and never delivered to webhooks themselves.
        const events = await server.engine.store.listEvents({
          types: ['webhook.delivered'],
          limit: 10,
        });
        assert.ok(events.length > 0);
        const metrics = await (await fetch(`${server.url}/metrics`)).text();
        assert.match(metrics, /ojs_webhook_delivery_total\{outcome="delivered"\} 1000\n/);
        assert.match(metrics, /ojs_webhook_retry_total [1-9]\d*\n/);
        assert.match(metrics, /ojs_webhook_subscription_count 1\n/);
        assert.match(metrics, /ojs_webhook_delivery_duration_seconds_count [1-9]/);
        assert.equal(
          (await call(server, 'DELETE', `/ojs/v1/webhooks/subscriptions/${subId}`)).status,
          204,
        );
      } finally {
        await receiver.close();
      }
    });

    it('subscription routes: wrappers, no secret on reads, 404s, test event, rotation with both signatures, tenant scoping', async () => {
      let secrets = [SECRET];
      const receiver = await startReceiver(() => secrets);
      try {
        const created = await call(server, 'POST', '/ojs/v1/webhooks/subscriptions', {
          url: receiver.url,
          events: ['job.completed'],
          secret: SECRET,
          metadata: { team: 'a' },
        });
        assert.equal(created.status, 201);
        const sub = created.body.subscription;
        assert.equal(sub.secret, SECRET);
        assert.equal(sub.active, true);
        const got = await call(server, 'GET', `/ojs/v1/webhooks/subscriptions/${sub.id}`);
        assert.equal(got.status, 200);
        assert.equal(got.body.subscription.secret, undefined);
        const list = await call(server, 'GET', '/ojs/v1/webhooks/subscriptions');
        assert.ok(list.body.subscriptions.some((s: Json) => s.id === sub.id));
        assert.ok(list.body.subscriptions.every((s: Json) => s.secret === undefined));
        const patched = await call(server, 'PATCH', `/ojs/v1/webhooks/subscriptions/${sub.id}`, {
          events: ['job.completed', 'job.failed'],
        });
        assert.equal(patched.status, 200);
        assert.deepEqual(patched.body.subscription.events, ['job.completed', 'job.failed']);
        assert.equal(
          (await call(server, 'PATCH', `/ojs/v1/webhooks/subscriptions/${sub.id}`, { events: [] }))
            .status,
          400,
        );
        assert.equal(
          (await call(server, 'GET', '/ojs/v1/webhooks/subscriptions/sub_nope')).status,
          404,
        );

        const test = await call(server, 'POST', `/ojs/v1/webhooks/subscriptions/${sub.id}/test`);
        assert.equal(test.status, 200);
        assert.equal(test.body.success, true);
        assert.equal(test.body.status_code, 200);
        assert.equal(typeof test.body.response_time_ms, 'number');
        const sent = receiver.received.at(-1)!;
        assert.equal(sent.headers['x-ojs-event-type'], 'webhook.test');
        assert.equal(JSON.parse(sent.body).type, 'webhook.test');
        assert.ok(sent.verified);

        const rotated = await call(
          server,
          'POST',
          `/ojs/v1/webhooks/subscriptions/${sub.id}/rotate-secret`,
        );
        assert.equal(rotated.status, 200);
        const fresh: string = rotated.body.subscription.secret;
        assert.notEqual(fresh, SECRET);
        await call(server, 'POST', `/ojs/v1/webhooks/subscriptions/${sub.id}/test`);
        const dual = receiver.received.at(-1)!;
        assert.equal(String(dual.headers['x-ojs-signature']).split(',').length, 2);
        // Either secret alone verifies during the overlap.
        secrets = [fresh];
        await call(server, 'POST', `/ojs/v1/webhooks/subscriptions/${sub.id}/test`);
        assert.ok(receiver.received.at(-1)!.verified);

        // Tenancy: a tenant sees only its own; another tenant's is not found.
        const acme = await call(
          server,
          'POST',
          '/ojs/v1/webhooks/subscriptions',
          { url: receiver.url, events: ['job.*'] },
          { 'X-OJS-Tenant': 'acme' },
        );
        assert.equal(acme.body.subscription.tenant_id, 'acme');
        const acmeList = await call(server, 'GET', '/ojs/v1/webhooks/subscriptions', undefined, {
          'X-OJS-Tenant': 'acme',
        });
        assert.deepEqual(
          acmeList.body.subscriptions.map((s: Json) => s.id),
          [acme.body.subscription.id],
        );
        const foreign = { 'X-OJS-Tenant': 'globex' };
        assert.equal(
          (
            await call(
              server,
              'GET',
              `/ojs/v1/webhooks/subscriptions/${acme.body.subscription.id}`,
              undefined,
              foreign,
            )
          ).status,
          404,
        );
        assert.equal(
          (
            await call(
              server,
              'DELETE',
              `/ojs/v1/webhooks/subscriptions/${acme.body.subscription.id}`,
              undefined,
              foreign,
            )
          ).status,
          404,
        );
        assert.equal(
          (await call(server, 'DELETE', `/ojs/v1/webhooks/subscriptions/${sub.id}`)).status,
          204,
        );
        assert.equal(
          (await call(server, 'DELETE', `/ojs/v1/webhooks/subscriptions/${sub.id}`)).status,
          404,
        );
        assert.equal(
          (
            await call(
              server,
              'DELETE',
              `/ojs/v1/webhooks/subscriptions/${acme.body.subscription.id}`,
              undefined,
              { 'X-OJS-Tenant': 'acme' },
            )
          ).status,
          204,
        );
      } finally {
        await receiver.close();
      }
    });

    it("a tenant's subscription receives only its tenant's events; a 410 is dead at once and replayable", async () => {
      let gone = true;
      const receiver = await startReceiver(
        () => [SECRET],
        () => (gone ? 410 : 200),
      );
      try {
        const sub = await call(
          server,
          'POST',
          '/ojs/v1/webhooks/subscriptions',
          {
            url: receiver.url,
            events: ['job.enqueued'],
            secret: SECRET,
            filter: { queues: ['wh-tenant'] },
          },
          { 'X-OJS-Tenant': 'acme' },
        );
        const subId = sub.body.subscription.id;
        await server.engine.enqueue({
          type: 't',
          queue: 'wh-tenant',
          args: [],
          meta: { tenant_id: 'globex' },
        });
        const mine = await server.engine.enqueue({
          type: 't',
          queue: 'wh-tenant',
          args: [],
          meta: { tenant_id: 'acme' },
        });
        assert.equal(mine.status, 'created');
        const acme = { 'X-OJS-Tenant': 'acme' };
        const dead = await eventually(
          () => call(server, 'GET', `/ojs/v1/webhooks/deliveries?state=dead`, undefined, acme),
          (r) => r.body.deliveries.length === 1,
          'the dead delivery',
        );
        const delivery = dead.body.deliveries[0];
        assert.equal(delivery.attempts, 1);
        assert.equal(delivery.last_status_code, 410);
        assert.equal(delivery.event.data.job_id, mine.status === 'created' ? mine.job.id : '');
        // Another tenant does not see it.
        assert.equal(
          (
            await call(server, 'GET', `/ojs/v1/webhooks/deliveries/${delivery.id}`, undefined, {
              'X-OJS-Tenant': 'globex',
            })
          ).status,
          404,
        );
        gone = false;
        const retried = await call(
          server,
          'POST',
          `/ojs/v1/webhooks/deliveries/${delivery.id}/retry`,
          undefined,
          acme,
        );
        assert.equal(retried.status, 200);
        assert.equal(retried.body.delivery.state, 'pending');
        await receiver.until(() => receiver.acknowledged.has(delivery.id), 30_000, 'the replay');
        assert.equal(
          (
            await call(
              server,
              'POST',
              `/ojs/v1/webhooks/deliveries/${delivery.id}/retry`,
              undefined,
              acme,
            )
          ).status,
          409,
        );
        // Only acme's event ever reached the receiver.
        assert.ok(receiver.received.every((r) => JSON.parse(r.body).data.tenant_id === 'acme'));
        await call(server, 'DELETE', `/ojs/v1/webhooks/subscriptions/${subId}`, undefined, acme);
      } finally {
        await receiver.close();
      }
    });
  });
}

describe('webhooks transport (sqlite, private targets allowed)', () => {
  let server: LiveServer;
  before(async () => {
    server = await startLiveServer('sqlite', {
      webhooksAllowPrivate: true,
      webhooksAllowHttp: true,
      webhooksRetrySchedule: FAST_SCHEDULE.slice(0, 5),
    });
  });
  after(() => server.close());

  const subscribe = async (url: string, extra: Record<string, unknown> = {}) => {
    const res = await call(server, 'POST', '/ojs/v1/webhooks/subscriptions', {
      url,
      events: ['webhook.never'],
      secret: SECRET,
      ...extra,
    });
    assert.equal(res.status, 201);
    return res.body.subscription.id as string;
  };

  it('follows up to 3 redirects, each re-signed POST arriving; a 4th hop is not followed', async () => {
    const receiver = await startReceiver(() => [SECRET]);
    const redirector = await startRedirector(receiver.port);
    try {
      const three = await subscribe(`http://127.0.0.1:${redirector.port}/hop3`);
      const ok = await call(server, 'POST', `/ojs/v1/webhooks/subscriptions/${three}/test`);
      assert.equal(ok.body.success, true, JSON.stringify(ok.body));
      assert.equal(receiver.received.length, 1);
      assert.ok(receiver.received[0]!.verified);
      const four = await subscribe(`http://127.0.0.1:${redirector.port}/hop4`);
      const refused = await call(server, 'POST', `/ojs/v1/webhooks/subscriptions/${four}/test`);
      assert.equal(refused.body.success, false);
      assert.match(refused.body.error, /more than 3 redirects/);
      assert.equal(receiver.received.length, 1);
    } finally {
      await redirector.close();
      await receiver.close();
    }
  });

  it('ends an attempt at the subscription timeout', async () => {
    const { createServer } = await import('node:http');
    // Reads the request and never answers.
    const silent = createServer((req) => req.resume());
    await new Promise<void>((resolve) => silent.listen(0, '127.0.0.1', resolve));
    try {
      const port = (silent.address() as { port: number }).port;
      const sub = await subscribe(`http://127.0.0.1:${port}/hook`, { timeout_ms: 5000 });
      const res = await call(server, 'POST', `/ojs/v1/webhooks/subscriptions/${sub}/test`);
      assert.equal(res.body.success, false);
      assert.equal(res.body.status_code, null);
      assert.match(res.body.error, /timeout after 5000 ms/);
      assert.ok(res.body.response_time_ms >= 4900, String(res.body.response_time_ms));
    } finally {
      silent.closeAllConnections();
      await new Promise((resolve) => silent.close(resolve));
    }
  });

  it('retries a 429 no sooner than its Retry-After', async () => {
    const receiver = await startReceiver(
      () => [SECRET],
      (n) => (n === 1 ? 429 : 200),
    );
    const retryAfter = 2;
    try {
      const sub = await subscribe(receiver.url, {
        events: ['job.enqueued'],
        filter: { queues: ['ra'] },
      });
      receiver.retryAfter = String(retryAfter);
      await server.engine.enqueue({ type: 't', queue: 'ra', args: [] });
      await receiver.until(() => receiver.acknowledged.size === 1, 30_000, 'the retried delivery');
      const [first, second] = receiver.received;
      assert.equal(first!.answered, 429);
      const gap = second!.at - first!.at;
      assert.ok(gap >= retryAfter * 1000 - 50, `retried after ${gap} ms`);
      await call(server, 'DELETE', `/ojs/v1/webhooks/subscriptions/${sub}`);
    } finally {
      await receiver.close();
    }
  });
});

/** Redirects /hopN to /hop(N-1) on itself, and /hop0 to the receiver. */
async function startRedirector(target: number): Promise<{ port: number; close(): Promise<void> }> {
  const { createServer } = await import('node:http');
  const server = createServer((req, res) => {
    req.resume();
    const n = Number(/hop(\d)/.exec(req.url ?? '')?.[1] ?? 0);
    const port = (server.address() as { port: number }).port;
    const location =
      n <= 1 ? `http://127.0.0.1:${target}/hook` : `http://127.0.0.1:${port}/hop${n - 1}`;
    res.writeHead(307, { location }).end();
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    port: (server.address() as { port: number }).port,
    close: () =>
      new Promise((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

describe('webhooks SSRF guard and transport (no operator flags)', () => {
  let server: LiveServer;
  before(async () => {
    server = await startLiveServer('sqlite', { webhooksRetrySchedule: FAST_SCHEDULE.slice(0, 5) });
  });
  after(() => server.close());

  it('refuses http: and literal private addresses at create time with 400', async () => {
    for (const url of [
      'http://example.com/hook',
      'https://127.0.0.1/hook',
      'https://10.1.2.3/hook',
      'https://[::1]/hook',
      'https://169.254.169.254/latest/meta-data',
      'https://[fd00:ec2::254]/',
    ]) {
      const res = await call(server, 'POST', '/ojs/v1/webhooks/subscriptions', {
        url,
        events: ['*'],
      });
      assert.equal(res.status, 400, url);
      assert.equal(res.body.error.code, 'invalid_request');
    }
  });

  it('refuses at delivery time a name that resolves to loopback, and the receiver gets nothing', async () => {
    const receiver = await startReceiver(() => [SECRET]);
    try {
      const created = await call(server, 'POST', '/ojs/v1/webhooks/subscriptions', {
        url: `https://localhost:${receiver.port}/hook`,
        events: ['job.enqueued'],
        secret: SECRET,
      });
      assert.equal(created.status, 201);
      const test = await call(
        server,
        'POST',
        `/ojs/v1/webhooks/subscriptions/${created.body.subscription.id}/test`,
      );
      assert.equal(test.body.success, false);
      assert.match(test.body.error, /refused/);
      await server.engine.enqueue({ type: 't', queue: 'q', args: [] });
      const dead = await eventually(
        () => call(server, 'GET', '/ojs/v1/webhooks/deliveries?state=dead'),
        (r) => r.body.deliveries.length === 1,
        'the refused delivery to die',
      );
      assert.match(dead.body.deliveries[0].last_error, /refused: localhost resolves to a private/);
      assert.equal(receiver.received.length, 0);
    } finally {
      await receiver.close();
    }
  });
});
