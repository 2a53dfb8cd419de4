/**
 * The behavioural suite every Store must pass (DESIGN §4, §7): one set of
 * node:test cases, run against a fresh store per test. A store package calls
 *
 *   runStoreSuite('sqlite :memory:', async () => {
 *     const store = new SqliteStore({ path: ':memory:' });
 *     await store.init();
 *     return { store };
 *   });
 *
 * The factory returns an initialised, empty store; the suite closes it and
 * runs `cleanup` after each test. Time is always passed explicitly (fixed
 * epochs from `fixtures.ts`), so nothing sleeps.
 */
import { afterEach, beforeEach, describe } from 'node:test';
import { adminTests } from './admin.ts';
import { claimTests } from './claim.ts';
import { commitTests } from './commit.ts';
import { type StoreFactory, SuiteContext } from './context.ts';
import { cronTests } from './cron.ts';
import { deadLetterTests } from './dead-letter.ts';
import { eventTests } from './events.ts';
import { findJobTests } from './find-jobs.ts';
import { jobTests } from './jobs.ts';
import { limitTests } from './limits.ts';
import { queueTests } from './queues.ts';
import { retentionTests } from './retention.ts';
import { settleTests } from './settle.ts';
import { tenancyTests } from './tenancy.ts';
import { timeTests } from './time.ts';
import { uniqueTests } from './unique.ts';
import { webhookTests } from './webhooks.ts';
import { workflowTests } from './workflows.ts';

export type { StoreFactory, StoreUnderTest } from './context.ts';

export function runStoreSuite(name: string, factory: StoreFactory): void {
  describe(`Store suite: ${name}`, () => {
    const ctx = new SuiteContext();
    beforeEach(() => ctx.open(factory));
    afterEach(() => ctx.close());

    jobTests(ctx);
    uniqueTests(ctx);
    claimTests(ctx);
    limitTests(ctx);
    commitTests(ctx);
    settleTests(ctx);
    timeTests(ctx);
    queueTests(ctx);
    eventTests(ctx);
    deadLetterTests(ctx);
    findJobTests(ctx);
    retentionTests(ctx);
    workflowTests(ctx);
    cronTests(ctx);
    adminTests(ctx);
    webhookTests(ctx);
    tenancyTests(ctx);
  });
}
