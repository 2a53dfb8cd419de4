import { it } from 'node:test';
import { storeSkipReason } from './helpers.ts';
import { defineWorkflowRaceSuite } from './workflow-graph-race-suite.ts';

const reason = await storeSkipReason('redis');
if (reason === undefined) defineWorkflowRaceSuite('redis');
else it('workflow advancement races on Redis', { skip: reason }, () => {});
