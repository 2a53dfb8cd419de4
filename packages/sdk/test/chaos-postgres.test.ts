import { it } from 'node:test';
import { defineChaosSuite } from './chaos-suite.ts';
import { postgresUnavailable } from './helpers.ts';

const reason = (process.env.OJS_SDK_TEST_STORES ?? 'sqlite,postgres').includes('postgres')
  ? await postgresUnavailable()
  : 'excluded by OJS_SDK_TEST_STORES';
if (reason === undefined) defineChaosSuite('postgres');
else it('chaos on PostgreSQL', { skip: reason }, () => {});
