/**
 * Graph workflows from the SDK: the typed builder, and workers running a
 * graph against a real server (HTTP and in-process, SQLite and PostgreSQL).
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { GraphBuilder, graph, type OjsClient, ValidationError } from '@ojs/sdk';
import { MODES, startTestServer, type TestServer, testStores, waitFor } from './helpers.ts';

describe('graph builder', () => {
  it('builds steps with ids and dependencies, each call returning a new builder', () => {
    const base = graph('etl').withOptions({ queue: 'etl' });
    const diamond = base
      .step('a', { type: 'etl.extract', args: [1] })
      .step('b', { type: 'etl.transform', dependsOn: ['a'] })
      .step('c', { type: 'etl.enrich', dependsOn: ['a'] })
      .step('d', { type: 'etl.load', dependsOn: ['b', 'c'] });
    assert.ok(diamond instanceof GraphBuilder);
    assert.equal(diamond.name, 'etl');
    assert.deepEqual(diamond.options, { queue: 'etl' });
    assert.deepEqual(
      diamond.steps.map((s) => [s.id, s.type, s.dependsOn ?? []]),
      [
        ['a', 'etl.extract', []],
        ['b', 'etl.transform', ['a']],
        ['c', 'etl.enrich', ['a']],
        ['d', 'etl.load', ['b', 'c']],
      ],
    );
    assert.equal(base.steps.length, 0, 'the builder it started from is unchanged');
  });

  it('refuses a repeated id and a dependency on a step not declared before', () => {
    const one = graph('g').step('a', { type: 'x.run' });
    // @ts-expect-error: 'a' is already an id of this graph.
    assert.throws(() => one.step('a', { type: 'x.run' }), ValidationError);
    // @ts-expect-error: 'zz' is not a step of this graph.
    assert.throws(() => one.step('b', { type: 'x.run', dependsOn: ['zz'] }), /'zz'/);
  });
});

for (const store of await testStores())
  for (const mode of MODES) {
    describe(`graph workflows (${mode}, ${store})`, () => {
      let server: TestServer;
      let client: OjsClient;
      const queue = `graph-${mode}`;
      before(async () => {
        server = await startTestServer({ store });
        client = server.client(mode);
      });
      after(() => server.close());

      it('a worker runs a diamond; D sees both results by step id and in order', async () => {
        const seen: Record<string, unknown> = {};
        const worker = server.worker(mode, { queues: [queue], concurrency: 4 });
        worker.register('graph.step', async (ctx) => {
          seen[ctx.stepId!] = { parents: ctx.parentResults, byStep: ctx.parentResultsByStep };
          return `${ctx.stepId}:${ctx.args[0]}`;
        });
        const definition = graph('diamond')
          .withOptions({ queue })
          .step('a', { type: 'graph.step', args: [1] })
          .step('b', { type: 'graph.step', args: [2], dependsOn: ['a'] })
          .step('c', { type: 'graph.step', args: [3], dependsOn: ['a'] })
          .step('d', { type: 'graph.step', args: [4], dependsOn: ['c', 'b'] });
        const created = await client.workflowGraph(definition);
        assert.equal(created.state, 'running');
        assert.equal(created.type, undefined);
        assert.deepEqual(
          created.steps?.map((s) => [s.id, s.state, s.depends_on]),
          [
            ['a', 'pending', []],
            ['b', 'waiting', ['a']],
            ['c', 'waiting', ['a']],
            ['d', 'waiting', ['c', 'b']],
          ],
        );
        await worker.start();
        try {
          const done = await waitFor(
            async () => {
              const workflow = await client.getWorkflow(created.id);
              return workflow.state === 'completed' && workflow;
            },
            { what: 'the diamond to complete' },
          );
          assert.deepEqual(
            done.steps?.map((s) => [s.id, s.state, s.result]),
            [
              ['a', 'completed', 'a:1'],
              ['b', 'completed', 'b:2'],
              ['c', 'completed', 'c:3'],
              ['d', 'completed', 'd:4'],
            ],
          );
        } finally {
          await worker.stop();
        }
        assert.deepEqual(seen.a, { parents: undefined, byStep: undefined });
        assert.deepEqual(seen.b, { parents: ['a:1'], byStep: { a: 'a:1' } });
        assert.deepEqual(seen.d, {
          parents: ['c:3', 'b:2'],
          byStep: { c: 'c:3', b: 'b:2' },
        });
      });

      it('a step may be a nested group; the next step receives its results', async () => {
        const seen: unknown[] = [];
        const worker = server.worker(mode, { queues: [queue], concurrency: 2 });
        worker.register('graph.part', async (ctx) => ctx.args[0]);
        worker.register('graph.sum', async (ctx) => {
          seen.push(ctx.parentResultsByStep);
          return 'summed';
        });
        const definition = graph('fan-in')
          .withOptions({ queue })
          .step('parts', {
            type: 'group',
            jobs: [
              { type: 'graph.part', args: [1], options: { queue } },
              { type: 'graph.part', args: [2], options: { queue } },
            ],
          })
          .step('sum', { type: 'graph.sum', dependsOn: ['parts'] });
        const created = await client.workflowGraph(definition);
        assert.equal(typeof created.steps?.[0]?.workflow_id, 'string');
        await worker.start();
        try {
          await waitFor(async () => (await client.getWorkflow(created.id)).state === 'completed', {
            what: 'the graph with a nested group to complete',
          });
        } finally {
          await worker.stop();
        }
        assert.deepEqual(seen, [{ parts: { 0: 1, 1: 2 } }]);
      });

      it('a plain definition with a cycle is refused by the server, naming the step', async () => {
        await assert.rejects(
          client.workflowGraph({
            name: 'loop',
            steps: [
              { id: 'a', type: 'graph.step', dependsOn: ['b'], options: { queue } },
              { id: 'b', type: 'graph.step', dependsOn: ['a'], options: { queue } },
            ],
          }),
          (error: unknown) =>
            error instanceof ValidationError &&
            /dependency cycle: a -> b -> a/.test(error.message) &&
            (error.details as { step_id?: string }).step_id === 'a',
        );
      });
    });
  }
