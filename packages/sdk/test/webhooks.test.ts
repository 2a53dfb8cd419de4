/**
 * client.webhooks against a real server, and verifyWebhookSignature on
 * what the server really sends: a receiver on loopback checks each
 * delivery with the SDK's verifier (the server allows private targets
 * and http: for it).
 */
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { NotFoundError, OjsClient, verifyWebhookSignature } from '@ojs/sdk';
import { type RunningServer, startServer } from '@ojs/server';

describe('client.webhooks', () => {
  let server: RunningServer;
  let dir: string;
  let client: OjsClient;
  let secret = '';
  const verified: boolean[] = [];
  const receiver = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const body = Buffer.concat(chunks).toString('utf8');
      verified.push(
        verifyWebhookSignature(
          secret,
          String(req.headers['x-ojs-timestamp']),
          body,
          String(req.headers['x-ojs-signature']),
        ),
      );
      res.writeHead(200).end('ok');
    });
  });

  before(async () => {
    dir = mkdtempSync(join(tmpdir(), 'ojs-sdk-webhooks-'));
    server = await startServer({
      port: 0,
      store: `sqlite:${join(dir, 'ojs.db')}`,
      logLevel: 'silent',
      webhooksAllowPrivate: true,
      webhooksAllowHttp: true,
    });
    await new Promise<void>((resolve) => receiver.listen(0, '127.0.0.1', resolve));
    client = new OjsClient({ url: server.url });
  });
  after(async () => {
    receiver.close();
    await server.close();
    rmSync(dir, { recursive: true, force: true });
  });

  it('creates, lists, updates, tests, rotates and deletes; the verifier accepts what the server signs', async () => {
    const url = `http://127.0.0.1:${(receiver.address() as AddressInfo).port}/hook`;
    const sub = await client.webhooks.create({ url, events: ['job.completed'] });
    assert.match(sub.secret!, /^whsec_/);
    secret = sub.secret!;
    assert.equal((await client.webhooks.get(sub.id)).secret, undefined);
    assert.deepEqual(
      (await client.webhooks.list()).map((s) => s.id),
      [sub.id],
    );
    const updated = await client.webhooks.update(sub.id, { events: ['job.*'], active: true });
    assert.deepEqual(updated.events, ['job.*']);
    const test = await client.webhooks.test(sub.id);
    assert.equal(test.success, true);
    assert.deepEqual(verified, [true]);
    // A wrong secret does not verify.
    secret = 'whsec_not_the_secret_at_all';
    await client.webhooks.test(sub.id);
    assert.deepEqual(verified, [true, false]);
    const rotated = await client.webhooks.rotateSecret(sub.id);
    secret = rotated.secret!;
    await client.webhooks.test(sub.id);
    assert.equal(verified.at(-1), true);

    await client.enqueue('sdk.webhook', [1]);
    // The fan-out runs beside the job path: poll the log until it has the delivery.
    const deadline = Date.now() + 10_000;
    let page = await client.webhooks.deliveries({ subscriptionId: sub.id });
    while (page.deliveries.length === 0 && Date.now() < deadline) {
      await new Promise((resolve) => setTimeout(resolve, 50));
      page = await client.webhooks.deliveries({ subscriptionId: sub.id });
    }
    assert.ok(page.deliveries.length >= 1);
    const one = await client.webhooks.delivery(page.deliveries[0]!.id);
    assert.equal(one.subscription_id, sub.id);

    await client.webhooks.delete(sub.id);
    await assert.rejects(client.webhooks.get(sub.id), NotFoundError);
  });
});
