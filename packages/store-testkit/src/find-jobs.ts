/**
 * Finding jobs (admin listings): listJobs with every filter, keyset pages
 * that stay stable while jobs are inserted and change state between pages,
 * countJobs, and counts per queue and state.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { Store } from '@ojs/core';
import {
  cancel,
  type JobFilter,
  type JobRecord,
  type JobState,
  type PageOrder,
  parseJobFilter,
} from '@ojs/core';
import type { SuiteContext } from './context.ts';
import {
  activeJob,
  completedJob,
  discardedJob,
  idsOf,
  insertOk,
  newJob,
  retryableJob,
  SECOND,
  T0,
  transition,
} from './fixtures.ts';

/**
 * Counts by queue and state come from counters the store keeps; any other
 * filter (here a type prefix every job matches) counts jobs. The two must
 * agree after every kind of change.
 */
async function countsAgree(store: Store, label: string) {
  const scanned = async (queue: string, state: JobState) =>
    store.countJobs({ queues: [queue], states: [state], typePrefix: '' });
  const counted = await store.countJobsByQueue();
  for (const { queue, state, count } of counted) {
    assert.equal(await scanned(queue, state), count, `${label}: ${queue}/${state}`);
    assert.equal(
      await store.countJobs({ queues: [queue], states: [state] }),
      count,
      `${label}: countJobs ${queue}/${state}`,
    );
  }
  let total = 0;
  for (const { count } of counted) total += count;
  assert.equal(await store.countJobs({}), total, `${label}: total`);
  assert.equal(await store.countJobs({ typePrefix: '' }), total, `${label}: scanned total`);
  return counted;
}

export function findJobTests(ctx: SuiteContext): void {
  /** Every page of a listing, following the last seq like a cursor does. */
  const allPages = async (
    filter: JobFilter,
    limit: number,
    order: PageOrder = 'desc',
    between?: (page: number) => Promise<void>,
  ): Promise<JobRecord[][]> => {
    const pages: JobRecord[][] = [];
    let afterSeq: number | undefined;
    for (;;) {
      const page = await ctx.store.listJobs({ filter, limit, order, afterSeq });
      if (page.length === 0) break;
      pages.push(page);
      afterSeq = page.at(-1)!.seq;
      await between?.(pages.length);
      assert.ok(pages.length < 100, 'pages end');
    }
    return pages;
  };

  describe('listJobs / countJobs', () => {
    it('lists every job newest first by default order desc, oldest first with asc', async () => {
      const jobs = await insertOk(ctx.store, [newJob(), newJob(), newJob()]);
      const desc = await ctx.store.listJobs({ filter: {}, limit: 10, order: 'desc' });
      assert.deepEqual(idsOf(desc), idsOf(jobs).reverse());
      const asc = await ctx.store.listJobs({ filter: {}, limit: 10, order: 'asc' });
      assert.deepEqual(idsOf(asc), idsOf(jobs));
      assert.deepEqual(asc[0], jobs[0], 'records as stored');
      assert.equal(await ctx.store.countJobs({}), 3);
    });

    it('filters by state, queue, type, type prefix, error type, tag, meta key and dead letter', async () => {
      const a = await completedJob(ctx.store, {
        type: 'email.send',
        tags: ['vip'],
        options: { queue: 'mail' },
      });
      const b = await retryableJob(ctx.store, {
        type: 'email.bounce',
        meta: { tenant: 't1' },
        options: { queue: 'mail' },
      });
      const c = await discardedJob(ctx.store, {
        type: 'report.build',
        options: { queue: 'reports' },
      });
      const d = (await insertOk(ctx.store, [newJob({ type: 'report.build' })]))[0]!;
      const cases: [JobFilter, JobRecord[]][] = [
        [{ states: ['completed'] }, [a]],
        [{ states: ['retryable', 'discarded'] }, [c, b]],
        [{ queues: ['mail'] }, [b, a]],
        [{ queues: ['mail', 'reports'], states: ['discarded', 'completed'] }, [c, a]],
        [{ types: ['report.build'] }, [d, c]],
        [{ typePrefix: 'email.' }, [b, a]],
        [{ errorType: b.error!.type }, [c, b]],
        [{ tag: 'vip' }, [a]],
        [{ metaKey: 'tenant' }, [b]],
        [{ deadLetter: true }, [c]],
        [{ states: ['completed', 'discarded'], finishedFrom: T0 }, [c, a]],
        [{ finishedFrom: T0 + SECOND }, []],
        [{ queues: ['mail'], typePrefix: 'email.b' }, [b]],
        [{ states: ['available'], queues: ['nowhere'] }, []],
      ];
      for (const [filter, expected] of cases) {
        const label = JSON.stringify(filter);
        const page = await ctx.store.listJobs({ filter, limit: 10, order: 'desc' });
        assert.deepEqual(idsOf(page), idsOf(expected), label);
        assert.equal(await ctx.store.countJobs(filter), expected.length, label);
      }
    });

    it('filters by a created_at range', async () => {
      const early = (await insertOk(ctx.store, [newJob({}, T0)], T0))[0]!;
      const middle = (await insertOk(ctx.store, [newJob({}, T0 + 10 * SECOND)], T0))[0]!;
      const late = (await insertOk(ctx.store, [newJob({}, T0 + 20 * SECOND)], T0))[0]!;
      const filter = { createdFrom: T0 + 5 * SECOND, createdTo: T0 + 20 * SECOND };
      const page = await ctx.store.listJobs({ filter, limit: 10, order: 'asc' });
      assert.deepEqual(idsOf(page), [middle.id]);
      assert.equal(await ctx.store.countJobs({ createdFrom: T0 + 10 * SECOND }), 2);
      assert.equal(await ctx.store.countJobs({ createdTo: T0 + SECOND }), 1);
      assert.ok(early && late);
    });

    it('takes filters parsed from query parameters (core parseJobFilter)', async () => {
      await insertOk(ctx.store, [newJob({ type: 'a.b', options: { queue: 'q1' } })]);
      const filter = parseJobFilter({ state: 'available,active', queue: 'q1', type: 'a.*' });
      assert.equal(await ctx.store.countJobs(filter), 1);
    });

    for (const order of ['desc', 'asc'] as const) {
      it(`pages (${order}) without repeats or gaps while jobs are inserted and change state`, async () => {
        const jobs = await insertOk(
          ctx.store,
          Array.from({ length: 7 }, () => newJob({ options: { queue: 'busy' } })),
        );
        const filter: JobFilter = { queues: ['busy'] };
        const pages = await allPages(filter, 2, order, async (page) => {
          // Between the first pages: a new job arrives and a listed job changes state.
          if (page > 3) return;
          await insertOk(ctx.store, [newJob({ options: { queue: 'busy' } })]);
          await transition(ctx.store, jobs[page]!.id, (j) => cancel(j, T0));
        });
        const seen = pages.flat().map((j) => j.id);
        assert.equal(new Set(seen).size, seen.length, 'no job listed twice');
        for (const job of jobs) assert.ok(seen.includes(job.id), `${job.id} listed`);
        assert.ok(
          pages.every((p) => p.length <= 2),
          'never more than the limit',
        );
        const seqs = pages.flat().map((j) => j.seq!);
        const sorted = [...seqs].sort((x, y) => (order === 'asc' ? x - y : y - x));
        assert.deepEqual(seqs, sorted, 'in seq order');
      });
    }

    it('merges several index ranges in seq order, within the limit', async () => {
      const made: JobRecord[] = [];
      for (let i = 0; i < 6; i++) {
        const queue = i % 2 === 0 ? 'even' : 'odd';
        made.push(
          i % 3 === 0
            ? await activeJob(ctx.store, { options: { queue } })
            : (await insertOk(ctx.store, [newJob({ options: { queue } })]))[0]!,
        );
      }
      const filter: JobFilter = { queues: ['even', 'odd'], states: ['available', 'active'] };
      const pages = await allPages(filter, 4);
      assert.deepEqual(
        pages.map((p) => p.length),
        [4, 2],
      );
      assert.deepEqual(idsOf(pages.flat()), idsOf(made).reverse());
    });
  });

  describe('countJobsByQueue', () => {
    it('counts per queue and state, leaving out empty pairs', async () => {
      await insertOk(ctx.store, [
        newJob({ options: { queue: 'a' } }),
        newJob({ options: { queue: 'a' } }),
      ]);
      await activeJob(ctx.store, { options: { queue: 'a' } });
      await completedJob(ctx.store, { options: { queue: 'b' } });
      const counts = await ctx.store.countJobsByQueue();
      assert.deepEqual(
        counts.map((c) => [c.queue, c.state, c.count]),
        [
          ['a', 'active', 1],
          ['a', 'available', 2],
          ['b', 'completed', 1],
        ],
      );
    });

    it('keeps counts exact through claims, settles, cancels, workflow-free deletes and pruning', async () => {
      const agree = (label: string) => countsAgree(ctx.store, label);
      await insertOk(ctx.store, [
        newJob({ options: { queue: 'a' } }),
        newJob({ options: { queue: 'a' } }),
        newJob({ options: { queue: 'b' } }),
      ]);
      await agree('inserted');
      await activeJob(ctx.store, { options: { queue: 'a' } });
      await completedJob(ctx.store, { options: { queue: 'a' } }, T0);
      await retryableJob(ctx.store, { options: { queue: 'b' } });
      await discardedJob(ctx.store, { options: { queue: 'b' } }, T0, true);
      const [toCancel] = await insertOk(ctx.store, [newJob({ options: { queue: 'b' } })]);
      await transition(ctx.store, toCancel!.id, (j) => cancel(j, T0));
      const settled = await agree('settled');
      assert.ok(settled.length >= 6, 'several pairs in play');
      assert.equal(await ctx.store.pruneJobs({ retention: 'completed', before: T0 + 1 }, 100), 1);
      assert.equal(await ctx.store.pruneJobs({ retention: 'cancelled', before: T0 + 1 }, 100), 1);
      const pruned = await agree('pruned');
      assert.deepEqual(
        pruned.filter((c) => c.state === 'completed' || c.state === 'cancelled'),
        [],
        'emptied pairs are left out',
      );
      await ctx.store.reset();
      assert.deepEqual(await agree('reset'), []);
      await insertOk(ctx.store, [newJob({ options: { queue: 'a' } })]);
      assert.deepEqual(
        (await agree('after reset')).map((c) => [c.queue, c.state, c.count]),
        [['a', 'available', 1]],
      );
    });

    it('keeps counts exact when writes of one group commit roll back, and through promotion and deletes', async () => {
      const [a, b, c] = await insertOk(ctx.store, [
        newJob({ options: { queue: 'r' } }),
        newJob({ options: { queue: 'r' } }),
        newJob({ options: { queue: 'r' } }),
      ]);
      const held = await activeJob(ctx.store, { options: { queue: 'r' } });
      // Issued together (one group on a store that groups writes): a commit
      // whose second update is stale rolls back its first one too; a settle
      // batch commits its valid item and refuses the stale one; a delete
      // with a stale rev changes nothing; a good commit applies.
      const outcomes = await Promise.all([
        ctx.store.commit({
          updates: [
            { job: cancel(a!, T0), expectRev: a!.rev },
            { job: cancel(b!, T0), expectRev: b!.rev + 7 },
          ],
        }),
        ctx.store.settleJobs({
          items: [
            {
              id: held.id,
              workerId: held.worker_id,
              attempt: held.attempt,
              settlement: { kind: 'complete', result: null },
            },
            {
              id: c!.id,
              workerId: 'nobody',
              attempt: 1,
              settlement: { kind: 'complete', result: null },
            },
          ],
          now: T0 + SECOND,
        }),
        ctx.store.commit({ deletes: [{ id: b!.id, expectRev: b!.rev + 3 }] }),
        ctx.store.commit({ updates: [{ job: cancel(c!, T0), expectRev: c!.rev }] }),
      ]);
      assert.equal(outcomes[0], false);
      assert.deepEqual(
        (outcomes[1] as { status: string }[]).map((r) => r.status),
        ['settled', 'conflict'],
      );
      assert.equal(outcomes[2], false);
      assert.equal(outcomes[3], true);
      assert.deepEqual(
        (await countsAgree(ctx.store, 'mixed group'))
          .filter((x) => x.queue === 'r')
          .map((x) => [x.state, x.count]),
        [
          ['available', 2],
          ['cancelled', 1],
          ['completed', 1],
        ],
      );
      // A scheduled job promoted when due; a guarded delete of a dead letter.
      const [later] = await insertOk(ctx.store, [
        newJob({ options: { queue: 'r', delay_until: new Date(T0 + 5 * SECOND).toISOString() } }),
      ]);
      assert.equal(later!.state, 'scheduled');
      await countsAgree(ctx.store, 'scheduled');
      assert.equal(await ctx.store.promoteDueJobs(T0 + 6 * SECOND), 1);
      const dead = await discardedJob(ctx.store, { options: { queue: 'r' } }, T0, true);
      assert.equal(
        await ctx.store.commit({ deletes: [{ id: dead.id, expectRev: dead.rev }] }),
        true,
      );
      assert.deepEqual(
        (await countsAgree(ctx.store, 'promoted and deleted'))
          .filter((x) => x.queue === 'r')
          .map((x) => [x.state, x.count]),
        [
          ['available', 3],
          ['cancelled', 1],
          ['completed', 1],
        ],
      );
    });
  });
}
