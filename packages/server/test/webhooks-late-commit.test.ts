/**
 * PostgreSQL numbers an event when it is inserted, not when its
 * transaction commits, so an event can become visible after events with
 * higher numbers were read. The fan-out re-reads a window behind its
 * cursor: an event committed late is still delivered. Here a transaction
 * inserts a job event and holds its commit while a later event is
 * delivered; after the commit, the held event is delivered too.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { makeEvent } from '@ojs/core';
import { startServer } from '../src/serve.ts';
import { storeKinds, tempStore, withPg } from './stores.ts';
import { startReceiver } from './webhook-receiver.ts';

const SECRET = 'whsec_late_commit_secret';

if ((await storeKinds()).includes('postgres')) {
  describe('webhooks fan-out on PostgreSQL', () => {
    it('delivers an event whose transaction committed after later events were fanned out', async () => {
      const { store, cleanup } = tempStore('postgres');
      const schema = new URL(store).searchParams.get('schema')!;
      const receiver = await startReceiver(() => [SECRET]);
      const server = await startServer({
        store,
        port: 0,
        logLevel: 'silent',
        webhooksAllowPrivate: true,
        webhooksAllowHttp: true,
      });
      try {
        await server.engine.webhooks.createSubscription(
          { url: receiver.url, events: ['job.enqueued'], secret: SECRET },
          undefined,
        );
        const late = makeEvent(
          'job.enqueued',
          'job_late',
          { job_id: 'job_late', job_type: 'late', queue: 'default', state: 'available' },
          Date.now(),
        );
        await withPg(async (client) => {
          await client.query('BEGIN');
          // Takes its seq now; visible only at COMMIT.
          await client.query(
            `INSERT INTO "${schema}".events (id, type, queue, job_type, doc) VALUES ('${late.id}', 'job.enqueued', 'default', 'late', '${JSON.stringify(late).replaceAll("'", "''")}'::jsonb)`,
          );
          const after = await server.engine.enqueue({ type: 'early', args: [] });
          assert.equal(after.status, 'created');
          const afterId = after.status === 'created' ? after.job.id : '';
          await receiver.until(
            () => receiver.received.some((r) => JSON.parse(r.body).data.job_id === afterId),
            30_000,
            'the later event to be delivered',
          );
          await client.query('COMMIT');
        });
        await receiver.until(
          () => receiver.received.some((r) => JSON.parse(r.body).data.job_id === 'job_late'),
          30_000,
          'the late-committed event to be delivered',
        );
        assert.ok(receiver.received.every((r) => r.verified));
      } finally {
        await server.close();
        await receiver.close();
        await cleanup();
      }
    });
  });
}
