import { it } from 'node:test';
import { storeSkipReason } from './helpers.ts';
import { defineProcessSuites } from './processes-suite.ts';

const reason = await storeSkipReason('postgres');
if (reason === undefined) defineProcessSuites('postgres');
else it('worker processes on PostgreSQL', { skip: reason }, () => {});
