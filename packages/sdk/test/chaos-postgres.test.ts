import { it } from 'node:test';
import { defineChaosSuite } from './chaos-suite.ts';
import { storeSkipReason } from './helpers.ts';

const reason = await storeSkipReason('postgres');
if (reason === undefined) defineChaosSuite('postgres');
else it('chaos on PostgreSQL', { skip: reason }, () => {});
