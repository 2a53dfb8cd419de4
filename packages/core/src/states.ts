/**
 * The eight job states and the transition table of the core spec (§6).
 * Stores never decide a transition; they apply one that `canTransition`
 * allowed, guarded on the state they read.
 */

export const JOB_STATES = [
  'scheduled',
  'available',
  'pending',
  'active',
  'completed',
  'retryable',
  'cancelled',
  'discarded',
] as const;

export type JobState = (typeof JOB_STATES)[number];

export const TERMINAL_STATES: ReadonlySet<JobState> = new Set([
  'completed',
  'cancelled',
  'discarded',
]);

/** States a job can be cancelled from (cancel of `active` flags the worker through BEAT). */
export const CANCELLABLE_STATES: ReadonlySet<JobState> = new Set([
  'scheduled',
  'available',
  'pending',
  'retryable',
  'active',
]);

const TRANSITIONS: Readonly<Record<JobState, readonly JobState[]>> = {
  // pending: waiting for ACTIVATE; scheduled: waiting for its time.
  pending: ['available', 'cancelled', 'discarded'],
  scheduled: ['available', 'cancelled', 'discarded'],
  available: ['active', 'cancelled', 'discarded'],
  // active -> available: visibility expiry or an explicit requeue;
  // active -> discarded: exhausted, non-retryable, or expired lease with no attempts left.
  active: ['completed', 'retryable', 'discarded', 'cancelled', 'available'],
  retryable: ['available', 'cancelled', 'discarded'],
  completed: [],
  cancelled: [],
  // Only the dead letter retry revives a discarded job (Level 1 DLQ).
  discarded: ['available'],
};

export function isJobState(value: unknown): value is JobState {
  return typeof value === 'string' && (JOB_STATES as readonly string[]).includes(value);
}

export function isTerminal(state: JobState): boolean {
  return TERMINAL_STATES.has(state);
}

export function canTransition(from: JobState, to: JobState): boolean {
  return TRANSITIONS[from].includes(to);
}

export function allowedTransitions(from: JobState): readonly JobState[] {
  return TRANSITIONS[from];
}
