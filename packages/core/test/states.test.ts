import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import {
  allowedTransitions,
  CANCELLABLE_STATES,
  canTransition,
  isJobState,
  isTerminal,
  JOB_STATES,
  type JobState,
  TERMINAL_STATES,
} from '../src/states.ts';

/**
 * The lifecycle of the core spec (http-binding digest §4.3-4.13, §17 rows 7, 8, 41, 44;
 * conformance digest §5), written out independently of the implementation:
 *
 * - scheduled -> available (due), cancelled (CANCEL), discarded (expires_at passed)
 * - pending   -> available (ACTIVATE), cancelled, discarded (expires_at passed)
 * - available -> active (FETCH), cancelled, discarded (expires_at passed)
 * - active    -> completed (ACK), retryable (FAIL with attempts left), discarded (FAIL
 *                exhausted / non-retryable, or lease lost with no attempts left),
 *                cancelled (CANCEL of an active job, row 7), available (visibility expiry
 *                or requeue, row 44)
 * - retryable -> available (backoff elapsed), cancelled, discarded (expires_at passed)
 * - completed, cancelled: no exits
 * - discarded -> available only (dead letter retry, L1)
 */
const EXPECTED: Record<JobState, readonly JobState[]> = {
  scheduled: ['available', 'cancelled', 'discarded'],
  pending: ['available', 'cancelled', 'discarded'],
  available: ['active', 'cancelled', 'discarded'],
  active: ['completed', 'retryable', 'discarded', 'cancelled', 'available'],
  retryable: ['available', 'cancelled', 'discarded'],
  completed: [],
  cancelled: [],
  discarded: ['available'],
};

describe('JOB_STATES', () => {
  it('lists exactly the eight spec states', () => {
    assert.deepEqual([...JOB_STATES].sort(), [
      'active',
      'available',
      'cancelled',
      'completed',
      'discarded',
      'pending',
      'retryable',
      'scheduled',
    ]);
  });

  it('isJobState accepts every state and rejects anything else', () => {
    for (const state of JOB_STATES) assert.equal(isJobState(state), true, state);
    for (const value of ['', 'Active', 'running', 'failed', 'dead', null, undefined, 3, {}]) {
      assert.equal(isJobState(value), false, String(value));
    }
  });
});

describe('transition table (8 x 8)', () => {
  for (const from of JOB_STATES) {
    for (const to of JOB_STATES) {
      const valid = EXPECTED[from].includes(to);
      it(`${from} -> ${to} is ${valid ? 'valid' : 'invalid'}`, () => {
        assert.equal(canTransition(from, to), valid);
      });
    }
  }

  it('no state may transition to itself', () => {
    for (const state of JOB_STATES) assert.equal(canTransition(state, state), false, state);
  });

  it('allowedTransitions agrees with canTransition for every state', () => {
    for (const from of JOB_STATES) {
      assert.deepEqual(
        [...allowedTransitions(from)].sort(),
        [...EXPECTED[from]].sort(),
        `exits of ${from}`,
      );
      for (const to of allowedTransitions(from)) assert.equal(canTransition(from, to), true);
    }
  });

  it('only FETCH (available -> active) enters active', () => {
    const into = JOB_STATES.filter((from) => canTransition(from, 'active'));
    assert.deepEqual(into, ['available']);
  });

  it('only ACK (active -> completed) enters completed', () => {
    const into = JOB_STATES.filter((from) => canTransition(from, 'completed'));
    assert.deepEqual(into, ['active']);
  });

  it('only FAIL (active -> retryable) enters retryable', () => {
    const into = JOB_STATES.filter((from) => canTransition(from, 'retryable'));
    assert.deepEqual(into, ['active']);
  });

  it('nothing enters scheduled or pending after enqueue', () => {
    for (const from of JOB_STATES) {
      assert.equal(canTransition(from, 'scheduled'), false, `${from} -> scheduled`);
      assert.equal(canTransition(from, 'pending'), false, `${from} -> pending`);
    }
  });
});

describe('terminal states', () => {
  it('are completed, cancelled and discarded', () => {
    assert.deepEqual([...TERMINAL_STATES].sort(), ['cancelled', 'completed', 'discarded']);
    for (const state of JOB_STATES) {
      assert.equal(isTerminal(state), ['completed', 'cancelled', 'discarded'].includes(state));
    }
  });

  it('have no exits except discarded -> available (dead letter retry)', () => {
    assert.deepEqual(allowedTransitions('completed'), []);
    assert.deepEqual(allowedTransitions('cancelled'), []);
    assert.deepEqual(allowedTransitions('discarded'), ['available']);
  });
});

describe('CANCELLABLE_STATES', () => {
  it('are exactly the non-terminal states, and each may move to cancelled', () => {
    for (const state of JOB_STATES) {
      assert.equal(CANCELLABLE_STATES.has(state), !isTerminal(state), state);
      assert.equal(canTransition(state, 'cancelled'), CANCELLABLE_STATES.has(state), state);
    }
  });
});
