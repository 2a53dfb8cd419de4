/**
 * The event log: append, list (type / queue / job type filters, `after`
 * cursor, limit) in append order, and pruning to the newest N.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { makeEvent, type OjsEvent } from '@ojs/core';
import type { SuiteContext } from './context.ts';
import { SECOND, T0 } from './fixtures.ts';

/** Ten events over three types, two queues and three job types, one per second. */
function sampleEvents(): OjsEvent[] {
  const specs: [type: string, queue: string | undefined, jobType: string | undefined][] = [
    ['job.enqueued', 'q1', 'email.send'],
    ['job.enqueued', 'q2', 'report.build'],
    ['job.started', 'q1', 'email.send'],
    ['queue.paused', 'q2', undefined],
    ['job.completed', 'q1', 'email.send'],
    ['job.started', 'q2', 'report.build'],
    ['server.started', undefined, undefined],
    ['job.enqueued', 'q1', 'image.resize'],
    ['job.completed', 'q2', 'report.build'],
    ['job.started', 'q1', 'image.resize'],
  ];
  return specs.map(([type, queue, jobType], index) => {
    const data: Record<string, unknown> = { index, nested: { list: [index, 'x'], nil: null } };
    if (queue !== undefined) data.queue = queue;
    if (jobType !== undefined) data.job_type = jobType;
    return makeEvent(
      type,
      jobType === undefined ? queue : `job-${index}`,
      data,
      T0 + index * SECOND,
    );
  });
}

export function eventTests(ctx: SuiteContext): void {
  describe('events', () => {
    const list = (filter: Partial<Parameters<typeof ctx.store.listEvents>[0]> = {}) =>
      ctx.store.listEvents({ limit: 1000, ...filter });
    const indexes = (events: OjsEvent[]) => events.map((e) => e.data.index);

    it('appends and lists events in order, exactly as given', async () => {
      const events = sampleEvents();
      await ctx.store.appendEvents(events.slice(0, 4));
      await ctx.store.appendEvents([]);
      await ctx.store.appendEvents(events.slice(4));
      assert.deepEqual(await list(), events);
    });

    it('filters by types, queues and job types (combined with AND)', async () => {
      await ctx.store.appendEvents(sampleEvents());
      assert.deepEqual(indexes(await list({ types: ['job.started'] })), [2, 5, 9]);
      assert.deepEqual(
        indexes(await list({ types: ['job.started', 'queue.paused'] })),
        [2, 3, 5, 9],
      );
      assert.deepEqual(indexes(await list({ queues: ['q2'] })), [1, 3, 5, 8]);
      assert.deepEqual(
        indexes(await list({ jobTypes: ['email.send', 'image.resize'] })),
        [0, 2, 4, 7, 9],
      );
      assert.deepEqual(indexes(await list({ types: ['job.enqueued'], queues: ['q1'] })), [0, 7]);
      assert.deepEqual(
        indexes(await list({ types: ['job.started'], queues: ['q1'], jobTypes: ['image.resize'] })),
        [9],
      );
      assert.deepEqual(await list({ types: ['job.nothing'] }), []);
    });

    it('limit bounds the page, oldest first', async () => {
      await ctx.store.appendEvents(sampleEvents());
      assert.deepEqual(indexes(await list({ limit: 3 })), [0, 1, 2]);
      assert.deepEqual(indexes(await list({ queues: ['q1'], limit: 2 })), [0, 2]);
    });

    it('newestFirst returns the newest matching events first (where a live stream starts)', async () => {
      await ctx.store.appendEvents(sampleEvents());
      assert.deepEqual(indexes(await list({ newestFirst: true, limit: 3 })), [9, 8, 7]);
      assert.deepEqual(indexes(await list({ newestFirst: true, queues: ['q2'], limit: 1 })), [8]);
      assert.deepEqual(await list({ newestFirst: true, types: ['job.nothing'] }), []);
    });

    it('subject selects one subject; it combines with types and newestFirst', async () => {
      await ctx.store.appendEvents(sampleEvents());
      assert.deepEqual(indexes(await list({ subject: 'job-4' })), [4]);
      assert.deepEqual(indexes(await list({ subject: 'q2' })), [3]);
      assert.deepEqual(
        indexes(await list({ types: ['job.started'], newestFirst: true, limit: 2 })),
        [9, 5],
      );
      assert.deepEqual(await list({ subject: 'job-404' }), []);
    });

    it('after returns the events that follow a given event id', async () => {
      const events = sampleEvents();
      await ctx.store.appendEvents(events);
      assert.deepEqual(indexes(await list({ after: events[6]!.id })), [7, 8, 9]);
      assert.deepEqual(await list({ after: events[9]!.id }), []);
      assert.deepEqual(
        indexes(await list({ after: events[1]!.id, types: ['job.started'] })),
        [2, 5, 9],
      );
      // A cursor walks the whole log page by page.
      const seen: unknown[] = [];
      let after: string | undefined;
      for (;;) {
        const page = await list({ limit: 3, ...(after === undefined ? {} : { after }) });
        if (page.length === 0) break;
        seen.push(...indexes(page));
        after = page.at(-1)!.id;
      }
      assert.deepEqual(seen, [0, 1, 2, 3, 4, 5, 6, 7, 8, 9]);
    });

    it('after works with a cursor event that does not match the filter', async () => {
      const events = sampleEvents();
      await ctx.store.appendEvents(events);
      assert.deepEqual(indexes(await list({ after: events[3]!.id, queues: ['q1'] })), [4, 7, 9]);
    });

    it('pruneEvents keeps the newest N and returns how many it removed', async () => {
      const events = sampleEvents();
      await ctx.store.appendEvents(events);
      assert.equal(await ctx.store.pruneEvents(3), 7);
      assert.deepEqual(await list(), events.slice(7));
      assert.equal(await ctx.store.pruneEvents(3), 0);
      assert.equal(await ctx.store.pruneEvents(100), 0);
      const more = [makeEvent('job.enqueued', 'x', { index: 10 }, T0 + 20 * SECOND)];
      await ctx.store.appendEvents(more);
      assert.equal(await ctx.store.pruneEvents(2), 2);
      assert.deepEqual(indexes(await list()), [9, 10]);
      assert.equal(await ctx.store.pruneEvents(0), 2);
      assert.deepEqual(await list(), []);
    });

    it('pruneEvents with a limit removes at most that many, oldest first', async () => {
      const events = sampleEvents();
      await ctx.store.appendEvents(events);
      assert.equal(await ctx.store.pruneEvents(3, 4), 4);
      assert.deepEqual(await list(), events.slice(4));
      assert.equal(await ctx.store.pruneEvents(3, 4), 3);
      assert.deepEqual(await list(), events.slice(7));
      assert.equal(await ctx.store.pruneEvents(3, 4), 0);
    });

    it('pruneEvents on an empty log removes nothing', async () => {
      assert.equal(await ctx.store.pruneEvents(5), 0);
    });
  });
}
