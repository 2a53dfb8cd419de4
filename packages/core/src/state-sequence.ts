/**
 * A sequence of job states checked against the lifecycle transition table (L0-LC-002), for
 * `ojs validate --transitions`. The `core` table is the one the engine runs (states.ts); the
 * `strict` table is L0-LC-002 verbatim, without the transitions Levels 1-2 add.
 */

import { type JsonKey, type Problems, shown, typeMismatch } from './envelope-problems.ts';
import { isObject } from './is-object.ts';
import { allowedTransitions, isJobState, isTerminal, JOB_STATES, type JobState } from './states.ts';

export type TransitionTable = 'core' | 'strict';

/** The L0-LC-002 table, verbatim. */
const SPEC_TRANSITIONS: Readonly<Record<JobState, readonly JobState[]>> = {
  scheduled: ['available', 'cancelled'],
  available: ['active', 'cancelled'],
  pending: ['available', 'cancelled'],
  active: ['completed', 'retryable', 'cancelled', 'discarded'],
  retryable: ['available', 'cancelled', 'discarded'],
  completed: [],
  cancelled: [],
  discarded: [],
};

export function nextStates(from: JobState, table: TransitionTable = 'core'): readonly JobState[] {
  return table === 'strict' ? SPEC_TRANSITIONS[from] : allowedTransitions(from);
}

/** The states of `["a", ...]`, `[{state}, ...]` or `{"states": [...]}`, each with its path. */
function stateItems(input: unknown, problems: Problems) {
  let list: unknown = input;
  let listKeys: JsonKey[] = [];
  if (isObject(input) && Array.isArray(input.states)) {
    list = input.states;
    listKeys = ['states'];
  }
  if (!Array.isArray(list)) {
    const report = typeMismatch(input, 'an array of states (or {"states": [...]})');
    problems.advise([], report.rule, report.message!);
    return null;
  }
  return list.map((item, i) => {
    const keys = [...listKeys, i];
    if (isObject(item) && 'state' in item) return { keys: [...keys, 'state'], value: item.state };
    return { keys, value: item as unknown };
  });
}

/**
 * Unknown states are `enum` problems; each disallowed step is a `transition` problem naming
 * the allowed targets. A state repeated back to back is not a transition (two snapshots of the
 * same active job) and is skipped. Problems are advised: nothing here is thrown.
 */
export function checkStateSequence(input: unknown, table: TransitionTable, problems: Problems) {
  const items = stateItems(input, problems);
  if (items === null) return;
  if (items.length === 0)
    problems.advise([], 'min_items', 'the sequence has no states', 'L0-LC-002');
  let previous: JobState | undefined;
  for (const item of items) {
    if (!isJobState(item.value)) {
      const message = `${shown(item.value)} is not one of the 8 states: ${JOB_STATES.join(', ')}`;
      problems.advise(item.keys, 'enum', message, 'L0-LC-001');
      previous = undefined;
      continue;
    }
    const state = item.value;
    if (previous !== undefined && previous !== state) {
      const allowed = nextStates(previous, table);
      if (!allowed.includes(state)) {
        const why =
          isTerminal(previous) && allowed.length === 0
            ? `${previous} is terminal`
            : `from ${previous} only ${allowed.join(', ')} ${allowed.length === 1 ? 'is' : 'are'} allowed`;
        const message = `${previous} -> ${state} is not allowed: ${why}`;
        problems.advise(item.keys, 'transition', message, 'L0-LC-002');
      }
    }
    previous = state;
  }
}
