/**
 * Workflow advancement under concurrency on a shared store (PostgreSQL,
 * Redis): 100 diamond workflows (A -> B, C -> D) run by 16 SDK workers
 * spread over four engines on one database (one serving HTTP, three
 * in-process), each worker taking one job at a time. B and C of a workflow
 * end at about the same moment on different engines, so their advancements
 * race on the workflow record: every D must be enqueued and run exactly
 * once, after both B and C. workflow-graph-postgres.test.ts and
 * workflow-graph-redis.test.ts run it per store.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import type { Store } from '@ojs/core';
import { Engine } from '@ojs/engine';
import { graph, OjsWorker } from '@ojs/sdk';
import { InProcessTransport } from '@ojs/sdk/in-process';
import { openStore, type StoreKind, startTestServer, type TestServer } from './helpers.ts';

const WORKFLOWS = 100;
const WORKERS = 16;
const QUEUE = 'diamonds';

export function defineWorkflowRaceSuite(kind: Exclude<StoreKind, 'sqlite'>): void {
  describe(`workflow advancement races on ${kind}`, () => {
    let server: TestServer;
    const engines: { engine: Engine; store: Store }[] = [];
    const workers: OjsWorker[] = [];

    before(async () => {
      server = await startTestServer({ store: kind });
      for (let i = 0; i < 3; i++) {
        const store = await openStore(server.store, server.schema);
        const engine = new Engine({ store });
        engine.start();
        engines.push({ engine, store });
      }
    });

    after(async () => {
      await Promise.all(workers.map((worker) => worker.stop()));
      for (const { engine, store } of engines) {
        await engine.stop();
        await store.close();
      }
      await server?.close();
    });

    it(`${WORKFLOWS} diamonds, ${WORKERS} workers on 4 engines: every D runs once, after B and C`, {
      timeout: 300_000,
    }, async () => {
      /** Order of handler starts and ends across all workers (one process, one counter). */
      let clock = 0;
      const runs = new Map<string, { start: number; end: number; byStep: unknown }[]>();
      const errors: unknown[] = [];
      let completed = 0;
      let allCompleted!: () => void;
      const finished = new Promise<void>((resolve) => {
        allCompleted = resolve;
      });

      const transports = [
        undefined,
        ...engines.map(({ engine }) => new InProcessTransport(engine)),
      ];
      for (let i = 0; i < WORKERS; i++) {
        const worker = new OjsWorker({
          url: server.url,
          transport: transports[i % transports.length],
          queues: [QUEUE],
          concurrency: 1,
          handleSignals: false,
          logLevel: 'silent',
          pollWaitMs: 500,
          pollIntervalMs: 20,
        });
        worker.register('diamond.step', async (ctx) => {
          const key = `${ctx.workflowId}/${ctx.stepId}`;
          const run = { start: ++clock, end: 0, byStep: ctx.parentResultsByStep };
          runs.set(key, [...(runs.get(key) ?? []), run]);
          // Yield so that jobs of other workers interleave with this one.
          await new Promise((resolve) => setImmediate(resolve));
          run.end = ++clock;
          return `${ctx.stepId}@${ctx.workflowId}`;
        });
        worker.on('jobCompleted', () => {
          if (++completed === WORKFLOWS * 4) allCompleted();
        });
        worker.on('error', ({ error }) => errors.push(error));
        workers.push(worker);
      }

      const client = server.client('http');
      const diamond = graph('diamond')
        .withOptions({ queue: QUEUE })
        .step('a', { type: 'diamond.step' })
        .step('b', { type: 'diamond.step', dependsOn: ['a'] })
        .step('c', { type: 'diamond.step', dependsOn: ['a'] })
        .step('d', { type: 'diamond.step', dependsOn: ['b', 'c'] });
      const created = await Promise.all(
        Array.from({ length: WORKFLOWS }, () => client.workflowGraph(diamond)),
      );
      await Promise.all(workers.map((worker) => worker.start()));
      await finished;
      assert.deepEqual(errors, []);

      for (const { id } of created) {
        const workflow = await client.getWorkflow(id);
        assert.equal(workflow.state, 'completed', `workflow ${id}`);
        const jobs = await server.engine.store.listWorkflowJobs(id);
        assert.deepEqual(
          jobs.map((job) => [job.workflow_step_id, job.state]).sort(),
          [
            ['a', 'completed'],
            ['b', 'completed'],
            ['c', 'completed'],
            ['d', 'completed'],
          ],
          `one job per step in ${id}`,
        );
        for (const step of ['a', 'b', 'c', 'd']) {
          assert.equal(runs.get(`${id}/${step}`)?.length, 1, `${id}/${step} ran once`);
        }
        const [b] = runs.get(`${id}/b`)!;
        const [c] = runs.get(`${id}/c`)!;
        const [d] = runs.get(`${id}/d`)!;
        assert.ok(d!.start > b!.end && d!.start > c!.end, `${id}: D started after B and C ended`);
        assert.deepEqual(d!.byStep, { b: `b@${id}`, c: `c@${id}` });
      }
      // Both B and C completing before D is what the step_completed events record too.
      const events = await server.engine.listEvents({
        types: ['workflow.step_completed'],
        limit: 10_000,
      });
      assert.equal(events.length, WORKFLOWS * 4);
    });
  });
}
