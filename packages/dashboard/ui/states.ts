/** The eight OJS job states, in lifecycle order (plain TS: the tests import it too). */
export const JOB_STATES = [
  'scheduled',
  'pending',
  'available',
  'active',
  'retryable',
  'completed',
  'cancelled',
  'discarded',
] as const;
export type JobState = (typeof JOB_STATES)[number];
export type Counts = Record<JobState, number>;
