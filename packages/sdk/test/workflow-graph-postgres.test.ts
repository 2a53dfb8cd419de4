import { it } from 'node:test';
import { storeSkipReason } from './helpers.ts';
import { defineWorkflowRaceSuite } from './workflow-graph-race-suite.ts';

const reason = await storeSkipReason('postgres');
if (reason === undefined) defineWorkflowRaceSuite('postgres');
else it('workflow advancement races on PostgreSQL', { skip: reason }, () => {});
