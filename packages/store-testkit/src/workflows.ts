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
  });
}
