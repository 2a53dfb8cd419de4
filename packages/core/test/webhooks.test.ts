/**
 * The webhooks extension's pure decisions: address classes for the SSRF
 * guard, subscription bodies, event matching, signatures, and a
 * delivery's outcomes over the retry schedule.
 */
import assert from 'node:assert/strict';
import { createHmac } from 'node:crypto';
import { describe, it } from 'node:test';
import {
  claimWebhookDelivery,
  classifyAddress,
  createWebhookSubscription,
  DEFAULT_TENANT,
  makeEvent,
  newWebhookDelivery,
  OjsError,
  parseRetrySchedule,
  patchWebhookSubscription,
  replayWebhookDelivery,
  retryAfterMs,
  rotateWebhookSecret,
  settleWebhookDelivery,
  subscriptionMatches,
  verifyWebhookSignature,
  WEBHOOK_RETRY_SCHEDULE,
  webhookDeliveryId,
  webhookOutcome,
  webhookSignature,
  webhookSignatureHeader,
  webhookSigningSecrets,
  webhookSubscriptionToWire,
} from '../src/index.ts';

const T0 = Date.UTC(2026, 0, 1);

function refused(fn: () => unknown, field: string): void {
  assert.throws(fn, (error: unknown) => {
    assert.ok(error instanceof OjsError);
    assert.equal(error.code, 'invalid_request');
    assert.equal(error.status, 400);
    assert.equal(error.details?.field, field);
    return true;
  });
}

describe('webhook address classes (SSRF guard)', () => {
  const cases: [string, string][] = [
    ['127.0.0.1', 'loopback'],
    ['127.9.9.9', 'loopback'],
    ['::1', 'loopback'],
    ['10.1.2.3', 'private'],
    ['172.16.0.1', 'private'],
    ['172.31.255.255', 'private'],
    ['192.168.1.1', 'private'],
    ['fd12:3456::1', 'private'],
    ['fc00::1', 'private'],
    ['169.254.1.1', 'link-local'],
    ['fe80::1', 'link-local'],
    ['169.254.169.254', 'metadata'],
    ['fd00:ec2::254', 'metadata'],
    ['::ffff:127.0.0.1', 'loopback'],
    ['::ffff:10.0.0.1', 'private'],
    ['0.0.0.0', 'unspecified'],
    ['::', 'unspecified'],
    ['172.32.0.1', 'public'],
    ['93.184.216.34', 'public'],
    ['2606:2800:220:1::1', 'public'],
    ['example.com', 'invalid'],
  ];
  for (const [ip, expected] of cases) {
    it(`${ip} is ${expected}`, () => assert.equal(classifyAddress(ip), expected));
  }
});

describe('webhook subscriptions', () => {
  const body = { url: 'https://example.com/hook', events: ['job.completed', 'job.failed'] };

  it('creates with defaults: active, a generated secret, 30 s timeout; the wire shape hides the secret', () => {
    const sub = createWebhookSubscription(body, {}, undefined, T0);
    assert.match(sub.id, /^sub_/);
    assert.equal(sub.active, true);
    assert.match(sub.secret, /^whsec_/);
    assert.equal(sub.timeout_ms, 30_000);
    assert.equal(webhookSubscriptionToWire(sub).secret, undefined);
    assert.equal(webhookSubscriptionToWire(sub, true).secret, sub.secret);
    const tenant = createWebhookSubscription(
      { ...body, secret: 'whk_test_secret_001' },
      {},
      'acme',
      T0,
    );
    assert.equal(tenant.secret, 'whk_test_secret_001');
    assert.equal(tenant.tenant_id, 'acme');
  });

  it('refuses bad bodies with a 400 naming the field', () => {
    refused(
      () => createWebhookSubscription({ events: ['job.completed'] }, {}, undefined, T0),
      'url',
    );
    refused(
      () => createWebhookSubscription({ ...body, url: 'ftp://x/y' }, {}, undefined, T0),
      'url',
    );
    refused(() => createWebhookSubscription({ ...body, events: [] }, {}, undefined, T0), 'events');
    refused(
      () => createWebhookSubscription({ ...body, events: ['Job Done'] }, {}, undefined, T0),
      'events',
    );
    refused(
      () => createWebhookSubscription({ ...body, secret: 'short' }, {}, undefined, T0),
      'secret',
    );
    refused(
      () => createWebhookSubscription({ ...body, timeout_ms: 1000 }, {}, undefined, T0),
      'timeout_ms',
    );
    refused(
      () => createWebhookSubscription({ ...body, filter: { tags: [] } }, {}, undefined, T0),
      'filter',
    );
    refused(
      () => createWebhookSubscription({ ...body, colour: 'red' }, {}, undefined, T0),
      'colour',
    );
  });

  it('refuses http: unless allowed, and literal private addresses unless allowed', () => {
    refused(
      () => createWebhookSubscription({ ...body, url: 'http://example.com/h' }, {}, undefined, T0),
      'url',
    );
    assert.ok(
      createWebhookSubscription(
        { ...body, url: 'http://example.com/h' },
        { allowHttp: true },
        undefined,
        T0,
      ),
    );
    for (const url of [
      'https://127.0.0.1/h',
      'https://[::1]:8443/h',
      'https://10.0.0.8/h',
      'https://169.254.169.254/latest',
    ]) {
      refused(() => createWebhookSubscription({ ...body, url }, {}, undefined, T0), 'url');
      assert.ok(createWebhookSubscription({ ...body, url }, { allowPrivate: true }, undefined, T0));
    }
    // A name is judged when delivering, on the address it resolves to.
    assert.ok(
      createWebhookSubscription({ ...body, url: 'https://localhost/h' }, {}, undefined, T0),
    );
  });

  it('patches url, events, filter, active and metadata; events are replaced', () => {
    const sub = createWebhookSubscription(body, {}, undefined, T0);
    const next = patchWebhookSubscription(
      sub,
      { events: ['job.*'], active: false, filter: { queues: ['q'] } },
      {},
      T0 + 1,
    );
    assert.deepEqual(next.events, ['job.*']);
    assert.equal(next.active, false);
    assert.deepEqual(next.filter, { queues: ['q'] });
    assert.equal(next.secret, sub.secret);
    refused(() => patchWebhookSubscription(sub, { secret: 'x'.repeat(20) }, {}, T0), 'secret');
  });

  it('rotation signs with both secrets for a day, then with the new one only', () => {
    const sub = createWebhookSubscription(body, {}, undefined, T0);
    const rotated = rotateWebhookSecret(sub, T0);
    assert.notEqual(rotated.secret, sub.secret);
    assert.deepEqual(webhookSigningSecrets(rotated, T0 + 1000), [rotated.secret, sub.secret]);
    assert.deepEqual(webhookSigningSecrets(rotated, T0 + 86_400_001), [rotated.secret]);
  });
});

describe('webhook event matching', () => {
  const sub = (extra: Record<string, unknown> = {}, tenant?: string) =>
    createWebhookSubscription(
      { url: 'https://e.com/h', events: ['job.completed'], ...extra },
      {},
      tenant,
      T0,
    );
  const event = (type: string, data: Record<string, unknown> = {}) =>
    makeEvent(type, 'j1', { queue: 'emails', job_type: 'send', ...data }, T0);

  it('matches exact types, prefix wildcards and *', () => {
    assert.ok(subscriptionMatches(sub(), event('job.completed')));
    assert.ok(!subscriptionMatches(sub(), event('job.failed')));
    assert.ok(subscriptionMatches(sub({ events: ['job.*'] }), event('job.failed')));
    assert.ok(!subscriptionMatches(sub({ events: ['job.*'] }), event('cron.triggered')));
    assert.ok(subscriptionMatches(sub({ events: ['*'] }), event('cron.triggered')));
  });

  it('never fans out webhook.* events, not even to *', () => {
    assert.ok(!subscriptionMatches(sub({ events: ['*'] }), event('webhook.delivered')));
    assert.ok(!subscriptionMatches(sub({ events: ['webhook.*'] }), event('webhook.dead')));
  });

  it('applies the filter on queues and job types (both must match)', () => {
    const filtered = sub({ filter: { queues: ['emails'], job_types: ['send'] } });
    assert.ok(subscriptionMatches(filtered, event('job.completed')));
    assert.ok(!subscriptionMatches(filtered, event('job.completed', { queue: 'other' })));
    assert.ok(!subscriptionMatches(filtered, event('job.completed', { job_type: 'other' })));
  });

  it("scopes by tenant: a tenant's subscription gets only its events; an operator's gets all", () => {
    assert.ok(subscriptionMatches(sub({}, 'acme'), event('job.completed', { tenant_id: 'acme' })));
    assert.ok(
      !subscriptionMatches(sub({}, 'acme'), event('job.completed', { tenant_id: 'other' })),
    );
    assert.ok(!subscriptionMatches(sub({}, 'acme'), event('job.completed')));
    assert.ok(subscriptionMatches(sub({}, DEFAULT_TENANT), event('job.completed')));
    assert.ok(subscriptionMatches(sub(), event('job.completed', { tenant_id: 'other' })));
    assert.ok(!subscriptionMatches(sub({ active: false }), event('job.completed')));
  });
});

describe('webhook signatures', () => {
  const body = '{"id":"evt_1"}';
  const now = 1_800_000_000;

  it('signs <timestamp>.<body> with HMAC-SHA256 as sha256=<hex>', () => {
    // HMAC-SHA256("secret", "1800000000.{\"id\":\"evt_1\"}"), computed independently.
    const expected = `sha256=${createHmac('sha256', 'secret').update(`${now}.${body}`).digest('hex')}`;
    assert.equal(webhookSignature('secret', now, body), expected);
  });

  it('verifies any of several signatures, in tolerance, and refuses the rest', () => {
    const header = webhookSignatureHeader(['new-secret', 'old-secret'], now, body);
    assert.equal(header.split(',').length, 2);
    assert.ok(verifyWebhookSignature('old-secret', now, body, header, { nowSec: now }));
    assert.ok(
      verifyWebhookSignature(['x', 'new-secret'], String(now), body, header, { nowSec: now + 299 }),
    );
    assert.ok(!verifyWebhookSignature('new-secret', now, body, header, { nowSec: now + 301 }));
    assert.ok(!verifyWebhookSignature('new-secret', now, `${body} `, header, { nowSec: now }));
    assert.ok(!verifyWebhookSignature('other', now, body, header, { nowSec: now }));
    assert.ok(!verifyWebhookSignature('new-secret', 'x', body, header, { nowSec: now }));
  });
});

describe('webhook delivery decisions', () => {
  const sub = createWebhookSubscription({ url: 'https://e.com/h', events: ['*'] }, {}, 'acme', T0);
  const event = makeEvent('job.completed', 'j1', { queue: 'q' }, T0);

  it('derives one delivery id per (event, subscription)', () => {
    assert.equal(webhookDeliveryId(event.id, sub.id), webhookDeliveryId(event.id, sub.id));
    assert.notEqual(webhookDeliveryId(event.id, sub.id), webhookDeliveryId(event.id, 'sub_other'));
    const d = newWebhookDelivery(event, sub, 8, T0);
    assert.equal(d.id, webhookDeliveryId(event.id, sub.id));
    assert.equal(d.tenant_id, 'acme');
    assert.equal(d.state, 'pending');
  });

  it('decides outcomes: 2xx delivered; 429, 5xx and errors retried; other 4xx dead', () => {
    assert.equal(webhookOutcome({ statusCode: 204, responseTimeMs: 1 }), 'delivered');
    assert.equal(webhookOutcome({ statusCode: 429, responseTimeMs: 1 }), 'retry');
    assert.equal(webhookOutcome({ statusCode: 503, responseTimeMs: 1 }), 'retry');
    assert.equal(webhookOutcome({ error: 'timeout', responseTimeMs: 1 }), 'retry');
    assert.equal(webhookOutcome({ statusCode: 404, responseTimeMs: 1 }), 'dead');
    assert.equal(webhookOutcome({ statusCode: 301, responseTimeMs: 1 }), 'dead');
  });

  it('walks the 8-step schedule, then dies; a replay starts afresh', () => {
    let d = newWebhookDelivery(event, sub, WEBHOOK_RETRY_SCHEDULE.length, T0);
    let now = T0;
    const delays: number[] = [];
    for (;;) {
      const claimed = claimWebhookDelivery(d, 'p', 40_000, now);
      assert.equal(claimed.rev, d.rev + 1);
      d = settleWebhookDelivery(
        claimed,
        { statusCode: 500, responseTimeMs: 1 },
        WEBHOOK_RETRY_SCHEDULE,
        now,
      );
      if (d.state === 'dead') break;
      delays.push(d.next_attempt_at - now);
      now = d.next_attempt_at;
    }
    assert.deepEqual(delays, WEBHOOK_RETRY_SCHEDULE.slice(1));
    assert.equal(d.attempts, 8);
    assert.equal(d.last_status_code, 500);
    const replay = replayWebhookDelivery(d, 8, now);
    assert.equal(replay.state, 'pending');
    assert.equal(replay.max_attempts, 16);
    assert.equal(replay.next_attempt_at, now);
  });

  it("honours a 429's Retry-After when it asks for longer than the schedule", () => {
    const d = claimWebhookDelivery(newWebhookDelivery(event, sub, 8, T0), 'p', 1000, T0);
    const later = settleWebhookDelivery(
      d,
      { statusCode: 429, retryAfter: '120', responseTimeMs: 1 },
      WEBHOOK_RETRY_SCHEDULE,
      T0,
    );
    assert.equal(later.next_attempt_at, T0 + 120_000);
    const sooner = settleWebhookDelivery(
      d,
      { statusCode: 429, retryAfter: '1', responseTimeMs: 1 },
      WEBHOOK_RETRY_SCHEDULE,
      T0,
    );
    assert.equal(sooner.next_attempt_at, T0 + 30_000);
    assert.equal(retryAfterMs(new Date(T0 + 90_000).toUTCString(), T0), 90_000);
    assert.equal(retryAfterMs('soon', T0), undefined);
  });

  it('a retry schedule needs at least 5 attempts', () => {
    assert.throws(() => parseRetrySchedule([0, 1, 2, 3]), /at least 5/);
    assert.deepEqual(parseRetrySchedule([0, 1, 2, 3, 4]), [0, 1, 2, 3, 4]);
  });
});
