/**
 * The SDK's `tenant` option on every transport (HTTP header X-OJS-Tenant,
 * gRPC metadata x-ojs-tenant, the in-process transport's engine scope): a
 * client's jobs carry its tenant, another tenant's client does not see
 * them, and a worker of the tenant is handed them; admin tenant methods.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { NotFoundError, OjsClient, type Transport } from '@ojs/sdk';
import { GrpcTransport } from '@ojs/sdk/grpc';
import { InProcessTransport } from '@ojs/sdk/in-process';
import { startTestServer, type TestServer } from './helpers.ts';

describe('SDK tenant option', () => {
  let server: TestServer;
  before(async () => {
    server = await startTestServer();
  });
  after(async () => server?.close());

  const transports: Record<string, (tenant: string) => Transport | undefined> = {
    http: () => undefined,
    grpc: (tenant) => new GrpcTransport({ address: server.grpcAddress, tenant }),
    'in-process': (tenant) => new InProcessTransport(server.engine, { tenant }),
  };

  for (const [mode, make] of Object.entries(transports)) {
    it(`${mode}: jobs carry the tenant; another tenant cannot see them; its worker fetches them`, async () => {
      const client = (tenant: string) =>
        new OjsClient({ url: server.url, tenant, transport: make(tenant) });
      const own = client(`sdk-${mode}`);
      const other = client(`sdk-${mode}-other`);
      const queue = `sdk-mt-${mode}`;
      const job = (await own.enqueue('mt.job', [1], { queue }))!;
      assert.equal(job.meta?.tenant_id, `sdk-${mode}`);
      await assert.rejects(other.getJob(job.id), NotFoundError);
      assert.equal((await own.getJob(job.id)).id, job.id);
      const foreign = await other.transport.fetchJobs({
        queues: [queue],
        count: 1,
        worker_id: 'w',
      });
      assert.deepEqual(foreign, []);
      const fetched = await own.transport.fetchJobs({ queues: [queue], count: 1, worker_id: 'w' });
      assert.deepEqual(
        fetched.map((j) => j.id),
        [job.id],
      );
    });
  }

  it('admin tenant methods', async () => {
    const admin = new OjsClient({ url: server.url }).admin;
    await admin.setTenantLimits('sdk-http', { max_queue_depth: 10, reason: 'test' });
    const tenant = await admin.tenant('sdk-http');
    assert.equal(tenant.limits.max_queue_depth, 10);
    const stats = await admin.tenantStats('sdk-http');
    assert.equal(stats.total_jobs, 1);
    const listed = await admin.tenants();
    assert.ok(listed.some((t) => t.tenant_id === 'sdk-http'));
    const jobs = await admin.tenantJobs('sdk-http', { state: 'active' });
    assert.equal(jobs.jobs.length, 1);
    await admin.deleteTenant('sdk-http');
    await assert.rejects(admin.tenant('sdk-http'), NotFoundError);
  });
});
