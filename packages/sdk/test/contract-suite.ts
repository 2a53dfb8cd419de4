/**
 * The SDK's behavioural contract, written once and run against every way
 * the SDK reaches an engine (contract.test.ts): the test helpers
 * (`testing.run('fake', ...)`), the in-process transport, and a live
 * server over HTTP and over gRPC. Each case states the outcome the OJS
 * rules give; a target that answers differently fails the same assertion.
 *
 * A target runs jobs its own way: the test helpers with `drain()` (the
 * clock moves to due retries and scheduled jobs), the others with a real
 * OjsWorker until the case's condition holds.
 */
import assert from 'node:assert/strict';
import {
  ConflictError,
  DiscardError,
  DuplicateJobError,
  type Job,
  type JobHandler,
  JobNotFoundError,
  type JobState,
  type OjsClient,
  uuidv7,
  ValidationError,
} from '@ojs/sdk';

export interface ContractTarget {
  client: OjsClient;
  /** A queue name of this case's own (live servers share one store across cases). */
  queue(name: string): string;
  /** Runs jobs of `queues` with `handlers` until `done` answers true. */
  work(
    queues: string[],
    handlers: Record<string, JobHandler>,
    done: () => Promise<boolean>,
  ): Promise<void>;
}

export interface ContractCase {
  name: string;
  run(target: ContractTarget): Promise<void>;
}

const FINISHED: JobState[] = ['completed', 'cancelled', 'discarded'];

/** True once every job is in a finished state. */
function finished(client: OjsClient, ...jobs: Array<Job | null>): () => Promise<boolean> {
  return async () => {
    for (const job of jobs) {
      if (!FINISHED.includes((await client.getJob(job!.id)).state)) return false;
    }
    return true;
  };
}

/** A short backoff without jitter: live targets wait it out, the test helpers skip it. */
const QUICK_RETRY = { initialInterval: 'PT0.05S', backoffCoefficient: 1, jitter: false } as const;

export const CONTRACT: ContractCase[] = [
  {
    name: 'enqueue stores the envelope as given and reads it back',
    async run({ client, queue }) {
      const id = uuidv7();
      const job = await client.enqueue('contract.enqueue', ['ada', { n: 1 }], {
        id,
        queue: queue('mail'),
        priority: 5,
        meta: { tenant: 't1' },
        retry: { maxAttempts: 4 },
      });
      assert.ok(job);
      assert.deepEqual(
        [job.id, job.state, job.attempt, job.queue, job.priority, job.max_attempts],
        [id, 'available', 0, queue('mail'), 5, 4],
      );
      const read = await client.getJob(id);
      assert.deepEqual([read.type, read.args, read.meta], [job.type, job.args, job.meta]);
    },
  },
  {
    name: 'errors map to the SDK error classes',
    async run({ client, queue }) {
      await assert.rejects(client.getJob(uuidv7()), JobNotFoundError);
      await assert.rejects(client.enqueue('Bad Type', []), ValidationError);
      await assert.rejects(
        client.enqueue('contract.errors', [], { queue: queue('q'), priority: 1000 }),
        ValidationError,
      );
      const job = await client.enqueue('contract.errors', [], { queue: queue('q') });
      await assert.rejects(
        client.enqueue('contract.errors', [], { id: job!.id, queue: queue('q') }),
        DuplicateJobError,
      );
    },
  },
  {
    name: 'a batch is stored in order, and refused whole when one envelope is invalid',
    async run({ client, queue }) {
      const jobs = await client.enqueueBatch([
        { type: 'contract.batch', args: [1], options: { queue: queue('b') } },
        { type: 'contract.batch', args: [2], options: { queue: queue('b') } },
      ]);
      assert.deepEqual(
        jobs.map((j) => [j.args, j.state]),
        [
          [[1], 'available'],
          [[2], 'available'],
        ],
      );
      const id = uuidv7();
      await assert.rejects(
        client.enqueueBatch([
          { type: 'contract.batch', args: [3], options: { id, queue: queue('b') } },
          { type: 'BAD', args: [] },
        ]),
        ValidationError,
      );
      await assert.rejects(client.getJob(id), JobNotFoundError);
    },
  },
  {
    name: 'a worker runs the handler and the job completes with its result',
    async run({ client, queue, work }) {
      const job = await client.enqueue('contract.double', [21], { queue: queue('w') });
      await work(
        [queue('w')],
        { 'contract.double': async (ctx) => ({ doubled: (ctx.args[0] as number) * 2 }) },
        finished(client, job),
      );
      const done = await client.getJob(job!.id);
      assert.deepEqual([done.state, done.attempt, done.result], ['completed', 1, { doubled: 42 }]);
    },
  },
  {
    name: 'a failure is retried after its backoff; exhaustion and DiscardError discard',
    async run({ client, queue, work }) {
      const q = queue('r');
      const retried = await client.enqueue('contract.flaky', ['retried'], {
        queue: q,
        retry: { maxAttempts: 2, ...QUICK_RETRY },
      });
      const exhausted = await client.enqueue('contract.flaky', ['exhausted'], {
        queue: q,
        retry: { maxAttempts: 2, ...QUICK_RETRY },
      });
      const refused = await client.enqueue('contract.flaky', ['refused'], {
        queue: q,
        retry: { maxAttempts: 5, ...QUICK_RETRY },
      });
      await work(
        [q],
        {
          'contract.flaky': async (ctx) => {
            if (ctx.args[0] === 'refused') throw new DiscardError('no point');
            if (ctx.args[0] === 'exhausted' || ctx.attempt === 1) {
              throw new Error(`attempt ${ctx.attempt}`);
            }
            return 'ok';
          },
        },
        finished(client, retried, exhausted, refused),
      );
      const [a, b, c] = await Promise.all(
        [retried, exhausted, refused].map((j) => client.getJob(j!.id)),
      );
      assert.deepEqual(
        [a!.state, a!.attempt, a!.result, a!.errors?.map((e) => e.message)],
        ['completed', 2, 'ok', ['attempt 1']],
      );
      assert.deepEqual(
        [b!.state, b!.attempt, b!.errors?.map((e) => e.message)],
        ['discarded', 2, ['attempt 1', 'attempt 2']],
      );
      assert.deepEqual([c!.state, c!.attempt, c!.error?.type], ['discarded', 1, 'discard']);
    },
  },
  {
    name: 'cancel ends a waiting job; cancelling it again conflicts',
    async run({ client, queue }) {
      const job = await client.enqueue('contract.cancel', [], { queue: queue('c') });
      const cancelled = await client.cancel(job!.id);
      assert.equal(cancelled.state, 'cancelled');
      assert.equal((await client.getJob(job!.id)).state, 'cancelled');
      await assert.rejects(client.cancel(job!.id), ConflictError);
    },
  },
  {
    name: 'unique jobs: reject conflicts, ignore answers the existing job',
    async run({ client, queue }) {
      // The key leaves the queue out, so the args carry this case's queue name.
      const key = queue('u');
      const options = { queue: key, unique: { keys: ['type', 'args'] as ('type' | 'args')[] } };
      const first = await client.enqueue('contract.unique', [key], options);
      await assert.rejects(client.enqueue('contract.unique', [key], options), DuplicateJobError);
      const again = await client.enqueue('contract.unique', [key], {
        ...options,
        unique: { ...options.unique, onConflict: 'ignore' },
      });
      assert.equal(again!.id, first!.id);
      const other = await client.enqueue('contract.unique', [key, 'other'], options);
      assert.notEqual(other!.id, first!.id);
    },
  },
  {
    name: 'a scheduled job waits until its time, then runs',
    async run({ client, queue, work }) {
      const job = await client.enqueue('contract.later', [], {
        queue: queue('s'),
        scheduledAt: new Date(Date.now() + 300),
      });
      assert.equal(job!.state, 'scheduled');
      assert.equal((await client.getJob(job!.id)).state, 'scheduled');
      await work([queue('s')], { 'contract.later': async () => 'on time' }, finished(client, job));
      const done = await client.getJob(job!.id);
      assert.deepEqual([done.state, done.result], ['completed', 'on time']);
    },
  },
  {
    name: 'a chain runs its steps in order, each with the previous result',
    async run({ client, queue, work }) {
      const q = queue('f');
      const chain = await client.chain(
        [
          { type: 'contract.step', args: [1], options: { queue: q } },
          { type: 'contract.step', args: [2], options: { queue: q } },
        ],
        { name: 'contract' },
      );
      const seen: unknown[] = [];
      await work(
        [q],
        {
          'contract.step': async (ctx) => {
            seen.push([ctx.args[0], ctx.parentResults ?? null]);
            return { step: ctx.args[0] };
          },
        },
        async () => (await client.getWorkflow(chain.id)).state === 'completed',
      );
      // The gRPC binding's Workflow message has no step counters: what the steps saw tells.
      assert.deepEqual(seen, [
        [1, null],
        [2, [{ step: 1 }]],
      ]);
    },
  },
];
