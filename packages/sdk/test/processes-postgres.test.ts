import { it } from 'node:test';
import { postgresUnavailable } from './helpers.ts';
import { defineProcessSuites } from './processes-suite.ts';

const reason = (process.env.OJS_SDK_TEST_STORES ?? 'sqlite,postgres').includes('postgres')
  ? await postgresUnavailable()
  : 'excluded by OJS_SDK_TEST_STORES';
if (reason === undefined) defineProcessSuites('postgres');
else it('worker processes on PostgreSQL', { skip: reason }, () => {});
