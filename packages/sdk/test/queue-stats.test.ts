/**
 * QUEUE_COUNT_STATES (the counts of QueueStats, the columns of the CLI's
 * count tables) keeps its own order; its states are core's, each once, so a
 * state added to the spec cannot go missing from the counts.
 */
import assert from 'node:assert/strict';
import { it } from 'node:test';
import { JOB_STATES } from '@ojs/core';
import { QUEUE_COUNT_STATES } from '@ojs/sdk';

it("QUEUE_COUNT_STATES holds every one of core's job states, each once", () => {
  assert.deepEqual([...QUEUE_COUNT_STATES].sort(), [...JOB_STATES].sort());
});
