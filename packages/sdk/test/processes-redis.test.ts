import { it } from 'node:test';
import { storeSkipReason } from './helpers.ts';
import { defineProcessSuites } from './processes-suite.ts';

const reason = await storeSkipReason('redis');
if (reason === undefined) defineProcessSuites('redis');
else it('worker processes on Redis', { skip: reason }, () => {});
