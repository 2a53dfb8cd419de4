import { it } from 'node:test';
import { defineChaosSuite } from './chaos-suite.ts';
import { storeSkipReason } from './helpers.ts';

const reason = await storeSkipReason('redis');
if (reason === undefined) defineChaosSuite('redis');
else it('chaos on Redis', { skip: reason }, () => {});
