/**
 * Workflow records: inserted and updated through commit (guarded on rev,
 * atomic with the job writes of the same step), read back with getWorkflow
 * and listWorkflowJobs.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { cancel, complete, type JobRecord, toIso, uuidv7, type WorkflowRecord } from '@ojs/core';
import type { SuiteContext } from './context.ts';
import { activeJob, allEvents, idsOf, mustGet, newJob, SECOND, T0 } from './fixtures.ts';

function workflowRecord(id = `wf_${uuidv7(T0)}`): WorkflowRecord {
  return {
    id,
    type: 'chain',
    name: 'onboarding ünïcødé',
    state: 'running',
    steps: [
      { index: 0, spec: { type: 'step.one', args: [1, { a: null }] }, state: 'pending' },
      {
        index: 1,
        spec: { type: 'step.two', args: [], options: { queue: 'wf' } },
        state: 'waiting',
      },
    ],
    callbacks: { on_complete: { type: 'wf.done', args: ['x'] } },
    created_at: '2026-01-01T13:00:00.123+01:00',
    started_at: toIso(T0),
    rev: 0,
  };
}

function workflowJob(workflow: WorkflowRecord, step: number, now = T0): JobRecord {
  const job = newJob({ type: `step.n${step}`, args: [step], options: { queue: 'wf' } }, now);
  job.workflow_id = workflow.id;
  job.workflow_step = step;
  return job;
}

export function workflowTests(ctx: SuiteContext): void {
  describe('workflows', () => {
    it('getWorkflow and listWorkflowJobs are empty for an unknown id', async () => {
      assert.equal(await ctx.store.getWorkflow('wf_missing'), null);
      assert.deepEqual(await ctx.store.listWorkflowJobs('wf_missing'), []);
    });

    it('commit inserts a workflow with its jobs; both read back exactly', async () => {
      const workflow = workflowRecord();
      const jobs = [workflowJob(workflow, 1), workflowJob(workflow, 0)];
      const other = workflowRecord(`wf_${uuidv7(T0)}`);
      const ok = await ctx.store.commit({
        workflowInserts: [workflow, other],
        inserts: [...jobs, workflowJob(other, 0), newJob()],
      });
      assert.equal(ok, true);
      assert.deepEqual(await ctx.store.getWorkflow(workflow.id), workflow);
      const listed = await ctx.store.listWorkflowJobs(workflow.id);
      assert.deepEqual(idsOf(listed), idsOf(jobs), 'only its jobs, in seq order');
      for (const [index, job] of listed.entries()) {
        assert.deepEqual(job, { ...jobs[index]!, seq: job.seq });
      }
    });

    it('listWorkflowJobs shows the jobs as they are now', async () => {
      const workflow = workflowRecord();
      const job = workflowJob(workflow, 0);
      await ctx.store.commit({ workflowInserts: [workflow], inserts: [job] });
      const stored = await mustGet(ctx.store, job.id);
      const cancelled = cancel(stored, T0 + SECOND);
      await ctx.store.commit({ updates: [{ job: cancelled, expectRev: stored.rev }] });
      assert.deepEqual(await ctx.store.listWorkflowJobs(workflow.id), [cancelled]);
    });

    it('a workflow update is guarded on rev and atomic with the job update', async () => {
      const workflow = workflowRecord();
      await ctx.store.commit({ workflowInserts: [workflow] });
      const job = await activeJob(ctx.store, { options: { queue: 'wf' } });
      const advanced: WorkflowRecord = {
        ...structuredClone(workflow),
        rev: workflow.rev + 1,
        steps: workflow.steps.map((s) =>
          s.index === 0 ? { ...s, state: 'completed' as const } : s,
        ),
      };
      const done = complete(job, { out: 1 }, T0 + SECOND);
      const next = workflowJob(workflow, 1, T0 + SECOND);

      // Stale workflow guard: neither the job, the insert nor the events land.
      const stale = await ctx.store.commit({
        updates: [{ job: done, expectRev: job.rev }],
        workflowUpdates: [{ workflow: advanced, expectRev: workflow.rev + 5 }],
        inserts: [next],
        events: [],
      });
      assert.equal(stale, false);
      assert.deepEqual(await mustGet(ctx.store, job.id), job);
      assert.deepEqual(await ctx.store.getWorkflow(workflow.id), workflow);
      assert.equal(await ctx.store.getJob(next.id), null);

      // Stale job guard: the workflow update does not land either.
      const staleJob = await ctx.store.commit({
        updates: [{ job: done, expectRev: job.rev - 1 }],
        workflowUpdates: [{ workflow: advanced, expectRev: workflow.rev }],
      });
      assert.equal(staleJob, false);
      assert.deepEqual(await ctx.store.getWorkflow(workflow.id), workflow);

      const ok = await ctx.store.commit({
        updates: [{ job: done, expectRev: job.rev }],
        workflowUpdates: [{ workflow: advanced, expectRev: workflow.rev }],
        inserts: [next],
      });
      assert.equal(ok, true);
      assert.deepEqual(await ctx.store.getWorkflow(workflow.id), advanced);
      assert.deepEqual(await mustGet(ctx.store, job.id), done);
      assert.deepEqual(idsOf(await ctx.store.listWorkflowJobs(workflow.id)), [next.id]);
      // The same rev cannot be used twice.
      assert.equal(
        await ctx.store.commit({
          workflowUpdates: [{ workflow: advanced, expectRev: workflow.rev }],
        }),
        false,
      );
    });

    it('updating a workflow that does not exist fails', async () => {
      const ghost = workflowRecord();
      assert.equal(
        await ctx.store.commit({
          workflowUpdates: [{ workflow: { ...ghost, rev: 1 }, expectRev: 0 }],
        }),
        false,
      );
      assert.equal(await ctx.store.getWorkflow(ghost.id), null);
    });

    it('inserting a workflow id twice fails and applies nothing', async () => {
      const workflow = workflowRecord();
      await ctx.store.commit({ workflowInserts: [workflow] });
      const job = newJob();
      let outcome: boolean | 'threw';
      try {
        outcome = await ctx.store.commit({
          workflowInserts: [{ ...workflowRecord(workflow.id), name: 'impostor' }],
          inserts: [job],
          events: [],
        });
      } catch {
        outcome = 'threw';
      }
      assert.notEqual(outcome, true);
      assert.deepEqual(await ctx.store.getWorkflow(workflow.id), workflow);
      assert.equal(await ctx.store.getJob(job.id), null);
      assert.deepEqual(await allEvents(ctx.store), []);
    });

    it('expiry of workflow jobs is left to the engine: promoteDueJobs skips them, findExpiringWorkflowJobs lists them', async () => {
      const workflow = workflowRecord();
      const expiring = (step: number, expires: string, extra: Record<string, unknown> = {}) => {
        const job = newJob(
          {
            type: `step.n${step}`,
            args: [],
            options: { queue: 'wf', expires_at: expires, ...extra },
          },
          T0,
        );
        job.workflow_id = workflow.id;
        job.workflow_step = step;
        return job;
      };
      const late = expiring(0, '+PT2S');
      const early = expiring(1, '+PT1S', { scheduled_at: '+PT1S' });
      const fresh = expiring(2, '+PT1H');
      const plain = newJob({ options: { expires_at: '+PT1S' } });
      assert.equal(
        await ctx.store.commit({
          workflowInserts: [workflow],
          inserts: [late, early, fresh, plain],
          now: T0,
        }),
        true,
      );
      const now = T0 + 3 * SECOND;
      assert.deepEqual(await ctx.store.findExpiringWorkflowJobs(T0, 10), []);
      // The due one is promoted (claims skip it while expired), none is expired.
      assert.equal(await ctx.store.promoteDueJobs(now), 1);
      assert.equal((await mustGet(ctx.store, plain.id)).state, 'discarded', 'a plain job expires');
      assert.equal((await mustGet(ctx.store, late.id)).state, 'available');
      assert.equal((await mustGet(ctx.store, early.id)).state, 'available');
      const found = await ctx.store.findExpiringWorkflowJobs(now, 10);
      assert.deepEqual(idsOf(found), [early.id, late.id], 'oldest expiry first, unexpired left');
      assert.deepEqual(found[1], await mustGet(ctx.store, late.id));
      assert.deepEqual(idsOf(await ctx.store.findExpiringWorkflowJobs(now, 1)), [early.id]);
      const events = await ctx.store.listEvents({ types: ['job.expired'], limit: 10 });
      assert.deepEqual(
        events.map((e) => e.subject),
        [plain.id],
      );
      // A claimed job is not expirable.
      const [claimed] = await ctx.store.claimJobs({ queues: ['wf'], count: 1, now: T0 + 500 });
      assert.equal(claimed?.id, late.id);
      assert.deepEqual(idsOf(await ctx.store.findExpiringWorkflowJobs(now, 10)), [early.id]);
    });
  });
}
