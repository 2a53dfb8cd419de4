import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { OjsError } from '../src/errors.ts';
import {
  DEFAULT_RETRY_POLICY,
  decideFailure,
  errorTypeOf,
  type FailureReport,
  matchesNonRetryable,
  normalizeRetryPolicy,
  type RetryPolicy,
  retryDelayMs,
} from '../src/retry.ts';

const ALMOST_ONE = 0.9999999999;

function policy(overrides: Partial<RetryPolicy> = {}): RetryPolicy {
  return { ...DEFAULT_RETRY_POLICY, non_retryable_errors: [], jitter: false, ...overrides };
}

/** Delays in whole seconds for retries n = 1..count, without jitter. */
function scheduleSeconds(p: RetryPolicy, count: number): number[] {
  return Array.from({ length: count }, (_, i) => retryDelayMs(p, i + 1) / 1000);
}

/** Asserts that `fn` throws a retry-policy validation error about `field`. */
function assertPolicyError(fn: () => unknown, field: string, messagePart?: string): void {
  assert.throws(fn, (error: unknown) => {
    assert.ok(error instanceof OjsError, 'expected an OjsError');
    assert.equal(error.code, 'validation_error');
    assert.equal(error.status, 422);
    assert.ok(error.message.includes(field), `message "${error.message}" should name ${field}`);
    if (messagePart !== undefined) {
      assert.ok(error.message.includes(messagePart), `message "${error.message}"`);
    }
    assert.deepEqual(error.details, {
      field,
      error_type: 'validation.retry_policy_invalid',
    });
    return true;
  });
}

describe('DEFAULT_RETRY_POLICY', () => {
  it('matches the spec defaults', () => {
    assert.deepEqual(DEFAULT_RETRY_POLICY, {
      max_attempts: 3,
      initial_interval: 'PT1S',
      backoff_coefficient: 2.0,
      max_interval: 'PT5M',
      jitter: true,
      non_retryable_errors: [],
      on_exhaustion: 'discard',
      backoff_strategy: 'exponential',
    });
  });

  it('is frozen, including its array', () => {
    assert.ok(Object.isFrozen(DEFAULT_RETRY_POLICY));
    assert.ok(Object.isFrozen(DEFAULT_RETRY_POLICY.non_retryable_errors));
  });

  it('gives the default schedule 1 s, 2 s', () => {
    const p = { ...DEFAULT_RETRY_POLICY, jitter: false };
    assert.deepEqual(scheduleSeconds(p, 2), [1, 2]);
  });
});

describe('normalizeRetryPolicy', () => {
  describe('defaults and merging', () => {
    it('returns a mutable copy of the default for undefined and null', () => {
      for (const input of [undefined, null]) {
        const result = normalizeRetryPolicy(input);
        assert.deepEqual(result, DEFAULT_RETRY_POLICY);
        assert.notEqual(result, DEFAULT_RETRY_POLICY);
        assert.notEqual(result.non_retryable_errors, DEFAULT_RETRY_POLICY.non_retryable_errors);
        result.non_retryable_errors.push('x');
        assert.deepEqual(DEFAULT_RETRY_POLICY.non_retryable_errors, []);
      }
    });

    it('returns the defaults for an empty object', () => {
      assert.deepEqual(normalizeRetryPolicy({}), DEFAULT_RETRY_POLICY);
    });

    it('merges a partial policy field by field', () => {
      assert.deepEqual(normalizeRetryPolicy({ max_attempts: 5 }), {
        ...DEFAULT_RETRY_POLICY,
        max_attempts: 5,
      });
      assert.deepEqual(normalizeRetryPolicy({ jitter: false, on_exhaustion: 'dead_letter' }), {
        ...DEFAULT_RETRY_POLICY,
        jitter: false,
        on_exhaustion: 'dead_letter',
      });
    });

    it('keeps every field of a full policy as given', () => {
      const full: RetryPolicy = {
        max_attempts: 10,
        initial_interval: 'PT0.5S',
        backoff_coefficient: 1.5,
        max_interval: 'PT1H',
        jitter: false,
        non_retryable_errors: ['auth.*', 'validation.payload_invalid'],
        on_exhaustion: 'dead_letter',
        backoff_strategy: 'polynomial',
      };
      assert.deepEqual(normalizeRetryPolicy(full), full);
    });

    it('keeps the duration text exactly as given', () => {
      const result = normalizeRetryPolicy({ initial_interval: 'PT90S', max_interval: 'PT24H' });
      assert.equal(result.initial_interval, 'PT90S');
      assert.equal(result.max_interval, 'PT24H');
    });

    it('treats null fields as absent', () => {
      assert.deepEqual(
        normalizeRetryPolicy({ max_attempts: null, jitter: null, initial_interval: null }),
        DEFAULT_RETRY_POLICY,
      );
    });

    it('ignores unknown keys', () => {
      const result = normalizeRetryPolicy({ max_attempts: 2, something_else: 'x', priority: 9 });
      assert.deepEqual(result, { ...DEFAULT_RETRY_POLICY, max_attempts: 2 });
      assert.equal('something_else' in result, false);
    });

    it('copies non_retryable_errors instead of sharing the input array', () => {
      const list = ['auth.*'];
      const result = normalizeRetryPolicy({ non_retryable_errors: list });
      list.push('other');
      assert.deepEqual(result.non_retryable_errors, ['auth.*']);
    });

    it('accepts coefficient 1.0 and max_interval equal to initial_interval', () => {
      const result = normalizeRetryPolicy({
        backoff_coefficient: 1,
        initial_interval: 'PT5M',
        max_interval: 'PT5M',
      });
      assert.equal(result.backoff_coefficient, 1);
      assert.equal(result.max_interval, 'PT5M');
    });

    it('accepts max_attempts 0 and 1', () => {
      assert.equal(normalizeRetryPolicy({ max_attempts: 0 }).max_attempts, 0);
      assert.equal(normalizeRetryPolicy({ max_attempts: 1 }).max_attempts, 1);
    });

    it('accepts every backoff strategy', () => {
      for (const strategy of ['exponential', 'linear', 'constant', 'polynomial', 'none']) {
        assert.equal(
          normalizeRetryPolicy({ backoff_strategy: strategy }).backoff_strategy,
          strategy,
        );
      }
    });
  });

  describe('aliases', () => {
    it('formats initial_interval_ms and max_interval_ms as ISO durations', () => {
      const result = normalizeRetryPolicy({ initial_interval_ms: 1500, max_interval_ms: 60_000 });
      assert.equal(result.initial_interval, 'PT1.5S');
      assert.equal(result.max_interval, 'PT1M');
    });

    it('prefers the ISO field when both spellings are given', () => {
      const result = normalizeRetryPolicy({ initial_interval: 'PT2S', initial_interval_ms: 9000 });
      assert.equal(result.initial_interval, 'PT2S');
    });

    it('accepts backoff_type as an alias of backoff_strategy', () => {
      assert.equal(normalizeRetryPolicy({ backoff_type: 'linear' }).backoff_strategy, 'linear');
      assert.equal(
        normalizeRetryPolicy({ backoff_type: 'linear', backoff_strategy: 'constant' })
          .backoff_strategy,
        'constant',
      );
    });

    it('validates the alias values and names the alias in the error', () => {
      assertPolicyError(
        () => normalizeRetryPolicy({ initial_interval_ms: -5 }),
        'retry.initial_interval_ms',
      );
      assertPolicyError(
        () => normalizeRetryPolicy({ initial_interval_ms: 1.5 }),
        'retry.initial_interval_ms',
      );
      assertPolicyError(
        () => normalizeRetryPolicy({ initial_interval_ms: '1000' }),
        'retry.initial_interval_ms',
      );
      assertPolicyError(
        () => normalizeRetryPolicy({ initial_interval_ms: 0 }),
        'retry.initial_interval_ms',
        'greater than zero',
      );
      assertPolicyError(
        () => normalizeRetryPolicy({ max_interval_ms: 500 }),
        'retry.max_interval_ms',
        '>= retry.initial_interval',
      );
      assertPolicyError(
        () => normalizeRetryPolicy({ backoff_type: 'fibonacci' }),
        'retry.backoff_type',
      );
    });
  });

  describe('validation', () => {
    it('requires an object', () => {
      for (const input of ['PT1S', 3, true, [], [1, 2]]) {
        assertPolicyError(() => normalizeRetryPolicy(input), 'retry', 'must be an object');
      }
    });

    it('uses the given field path in messages and details', () => {
      assertPolicyError(() => normalizeRetryPolicy('x', 'options.retry'), 'options.retry');
      assertPolicyError(
        () => normalizeRetryPolicy({ max_attempts: -1 }, 'options.retry'),
        'options.retry.max_attempts',
      );
    });

    it('rejects a negative max_attempts with the suite message', () => {
      assert.throws(
        () => normalizeRetryPolicy({ max_attempts: -1 }),
        (error: unknown) =>
          error instanceof OjsError &&
          error.message === 'retry.max_attempts must be a non-negative integer (got -1)',
      );
    });

    it('rejects a non-integer or non-number max_attempts', () => {
      for (const value of [1.5, '3', true, Number.NaN, Number.POSITIVE_INFINITY, [3], {}]) {
        assertPolicyError(
          () => normalizeRetryPolicy({ max_attempts: value }),
          'retry.max_attempts',
        );
      }
    });

    it('rejects backoff_coefficient below 1.0 with the suite message', () => {
      assert.throws(
        () => normalizeRetryPolicy({ backoff_coefficient: 0.5 }),
        (error: unknown) =>
          error instanceof OjsError &&
          error.message === 'retry.backoff_coefficient must be >= 1.0 (got 0.5)',
      );
    });

    it('rejects other invalid backoff_coefficient values', () => {
      for (const value of [0, -2, 0.999, '2', Number.NaN, Number.POSITIVE_INFINITY, false]) {
        assertPolicyError(
          () => normalizeRetryPolicy({ backoff_coefficient: value }),
          'retry.backoff_coefficient',
        );
      }
    });

    it('rejects malformed initial_interval values', () => {
      for (const value of ['P', 'PT', '1S', 'PT-1S', 'pt1s', 'PT1S junk', '', 1000, true, {}]) {
        assertPolicyError(
          () => normalizeRetryPolicy({ initial_interval: value }),
          'retry.initial_interval',
          'ISO 8601',
        );
      }
    });

    it('rejects a zero initial_interval', () => {
      for (const value of ['PT0S', 'P0D', 'PT0.0001S']) {
        assertPolicyError(
          () => normalizeRetryPolicy({ initial_interval: value }),
          'retry.initial_interval',
          'greater than zero',
        );
      }
    });

    it('rejects malformed max_interval values', () => {
      for (const value of ['PT', 'five minutes', 300, 'P1.5D']) {
        assertPolicyError(
          () => normalizeRetryPolicy({ max_interval: value }),
          'retry.max_interval',
          'ISO 8601',
        );
      }
    });

    it('rejects max_interval below initial_interval', () => {
      assertPolicyError(
        () => normalizeRetryPolicy({ initial_interval: 'PT10S', max_interval: 'PT5S' }),
        'retry.max_interval',
        '>= retry.initial_interval',
      );
    });

    it('checks initial_interval against the default max_interval when only one is given', () => {
      assertPolicyError(
        () => normalizeRetryPolicy({ initial_interval: 'PT10M' }),
        'retry.max_interval',
        '(default)',
      );
      assertPolicyError(
        () => normalizeRetryPolicy({ max_interval: 'PT0.5S' }),
        'retry.max_interval',
      );
    });

    it('rejects a non-boolean jitter', () => {
      for (const value of ['true', 1, 0, {}, []]) {
        assertPolicyError(() => normalizeRetryPolicy({ jitter: value }), 'retry.jitter');
      }
    });

    it('rejects non_retryable_errors that are not arrays of non-empty strings', () => {
      for (const value of ['auth.*', [''], ['ok', 3], [null], {}, 5, [['nested']]]) {
        assertPolicyError(
          () => normalizeRetryPolicy({ non_retryable_errors: value }),
          'retry.non_retryable_errors',
        );
      }
    });

    it('accepts an empty non_retryable_errors list', () => {
      assert.deepEqual(normalizeRetryPolicy({ non_retryable_errors: [] }).non_retryable_errors, []);
    });

    it('rejects an unknown on_exhaustion', () => {
      for (const value of ['dead-letter', 'DISCARD', 'retry', '', 1]) {
        assertPolicyError(
          () => normalizeRetryPolicy({ on_exhaustion: value }),
          'retry.on_exhaustion',
          '"discard", "dead_letter"',
        );
      }
    });

    it('rejects an unknown backoff_strategy', () => {
      for (const value of ['fibonacci', 'Exponential', '', 2]) {
        assertPolicyError(
          () => normalizeRetryPolicy({ backoff_strategy: value }),
          'retry.backoff_strategy',
        );
      }
    });

    it('truncates long values in messages', () => {
      assert.throws(
        () => normalizeRetryPolicy({ jitter: 'x'.repeat(500) }),
        (error: unknown) => error instanceof OjsError && error.message.length < 150,
      );
    });
  });
});

describe('retryDelayMs', () => {
  describe('reference schedules (features digest §1.4, no jitter)', () => {
    it('exponential I=1s C=2 up to the 300 s cap', () => {
      const p = policy({ initial_interval: 'PT1S', backoff_coefficient: 2, max_interval: 'PT5M' });
      assert.deepEqual(scheduleSeconds(p, 10), [1, 2, 4, 8, 16, 32, 64, 128, 256, 300]);
      assert.equal(retryDelayMs(p, 50), 300_000);
      assert.equal(retryDelayMs(p, 5000), 300_000);
    });

    it('polynomial I=1s C=4', () => {
      const p = policy({ backoff_strategy: 'polynomial', backoff_coefficient: 4 });
      assert.deepEqual(scheduleSeconds(p, 5), [1, 16, 81, 256, 300]);
    });

    it('polynomial I=15s C=4 M=1h', () => {
      const p = policy({
        backoff_strategy: 'polynomial',
        initial_interval: 'PT15S',
        backoff_coefficient: 4,
        max_interval: 'PT1H',
      });
      assert.deepEqual(scheduleSeconds(p, 4), [15, 240, 1215, 3600]);
    });

    it('linear I=5s', () => {
      const p = policy({ backoff_strategy: 'linear', initial_interval: 'PT5S' });
      assert.deepEqual(scheduleSeconds(p, 4), [5, 10, 15, 20]);
    });

    it('linear ignores the coefficient (suite: C=1, 1 s, 2 s, 3 s)', () => {
      const p = policy({ backoff_strategy: 'linear', backoff_coefficient: 1 });
      assert.deepEqual(scheduleSeconds(p, 3), [1, 2, 3]);
      const q = policy({ backoff_strategy: 'linear', backoff_coefficient: 7 });
      assert.deepEqual(scheduleSeconds(q, 3), [1, 2, 3]);
    });

    it('constant and none ignore n and the coefficient', () => {
      for (const backoff_strategy of ['constant', 'none'] as const) {
        const p = policy({ backoff_strategy, initial_interval: 'PT5S', backoff_coefficient: 3 });
        assert.deepEqual(scheduleSeconds(p, 4), [5, 5, 5, 5]);
      }
    });

    it('exponential with C=1 is constant', () => {
      const p = policy({ backoff_coefficient: 1, initial_interval: 'PT2S' });
      assert.deepEqual(scheduleSeconds(p, 4), [2, 2, 2, 2]);
    });

    it('caps at max_interval (suite: C=10, PT2S cap: 1 s then 2 s)', () => {
      const p = policy({ backoff_coefficient: 10, max_interval: 'PT2S' });
      assert.deepEqual(scheduleSeconds(p, 3), [1, 2, 2]);
    });

    it('handles fractional intervals and coefficients', () => {
      const p = policy({ initial_interval: 'PT0.5S', backoff_coefficient: 1.5 });
      assert.deepEqual(
        [1, 2, 3].map((n) => retryDelayMs(p, n)),
        [500, 750, 1125],
      );
      assert.equal(retryDelayMs(policy({ backoff_coefficient: 1.1 }), 2), 1100);
    });

    it('returns integers', () => {
      const p = policy({ initial_interval: 'PT0.333S', backoff_coefficient: 1.7 });
      for (let n = 1; n <= 20; n += 1) assert.ok(Number.isInteger(retryDelayMs(p, n)));
    });

    it('treats n below 1 as the first retry', () => {
      const p = policy({ initial_interval: 'PT3S' });
      assert.equal(retryDelayMs(p, 0), 3000);
      assert.equal(retryDelayMs(p, -4), 3000);
    });
  });

  describe('jitter', () => {
    const base = policy({ jitter: true, initial_interval: 'PT2S', backoff_coefficient: 1 });

    it('multiplies by 0.5 when random() is 0', () => {
      assert.equal(
        retryDelayMs(base, 1, () => 0),
        1000,
      );
    });

    it('approaches 1.5x when random() is just below 1', () => {
      assert.equal(
        retryDelayMs(base, 1, () => ALMOST_ONE),
        3000,
      );
      assert.ok(retryDelayMs(base, 1, () => 0.999) < 3000);
    });

    it('is the raw delay at random() = 0.5', () => {
      assert.equal(
        retryDelayMs(base, 1, () => 0.5),
        2000,
      );
    });

    it('stays in [0.5 D, 1.5 D] for many random draws (suite: 1000-3000)', () => {
      for (let i = 0; i < 2000; i += 1) {
        const delay = retryDelayMs(base, 1);
        assert.ok(delay >= 1000 && delay <= 3000, `delay ${delay}`);
      }
    });

    it('uses Math.random by default', () => {
      const original = Math.random;
      Math.random = () => 0;
      try {
        assert.equal(retryDelayMs(base, 1), 1000);
      } finally {
        Math.random = original;
      }
    });

    it('caps before jitter, so a huge raw delay can still be jittered down', () => {
      // I=10s C=2 M=300s: raw 320 s -> 300 s -> jitter [150, 450) -> capped [150, 300].
      const p = policy({ jitter: true, initial_interval: 'PT10S', max_interval: 'PT5M' });
      assert.equal(
        retryDelayMs(p, 6, () => 0),
        150_000,
      );
      assert.equal(
        retryDelayMs(p, 30, () => 0),
        150_000,
      );
    });

    it('caps again after jitter', () => {
      const p = policy({ jitter: true, initial_interval: 'PT10S', max_interval: 'PT5M' });
      assert.equal(
        retryDelayMs(p, 6, () => ALMOST_ONE),
        300_000,
      );
      // 160 s is under the cap before and after jitter (240 s), so nothing is clipped.
      assert.equal(
        retryDelayMs(p, 5, () => ALMOST_ONE),
        240_000,
      );
      // 4 s is under the 5 s cap, but 1.5 x 4 s = 6 s is not: the second cap clips it.
      const tight = policy({ jitter: true, initial_interval: 'PT4S', max_interval: 'PT5S' });
      assert.equal(
        retryDelayMs(tight, 1, () => ALMOST_ONE),
        5000,
      );
    });

    it('floors at zero even with a misbehaving random source', () => {
      assert.equal(
        retryDelayMs(base, 1, () => -5),
        0,
      );
    });

    it('does not consult random() when jitter is off', () => {
      let calls = 0;
      retryDelayMs(policy(), 1, () => {
        calls += 1;
        return 0;
      });
      assert.equal(calls, 0);
    });
  });

  it('throws on a policy holding an invalid duration', () => {
    assert.throws(() => retryDelayMs(policy({ initial_interval: 'soon' }), 1), RangeError);
  });
});

describe('errorTypeOf', () => {
  it('prefers type', () => {
    assert.equal(
      errorTypeOf({ type: 'auth.expired', code: 'handler_error', details: { error_class: 'X' } }),
      'auth.expired',
    );
  });
  it('falls back to details.error_class', () => {
    assert.equal(
      errorTypeOf({ code: 'handler_error', details: { error_class: 'Auth.TokenExpired' } }),
      'Auth.TokenExpired',
    );
  });
  it('ignores a non-string error_class', () => {
    assert.equal(
      errorTypeOf({ code: 'handler_error', details: { error_class: 7 } }),
      'handler_error',
    );
  });
  it('falls back to code, then handler_error', () => {
    assert.equal(errorTypeOf({ code: 'timeout' }), 'timeout');
    assert.equal(errorTypeOf({}), 'handler_error');
    assert.equal(errorTypeOf({ message: 'boom' }), 'handler_error');
  });
  it('skips empty strings', () => {
    assert.equal(errorTypeOf({ type: '', details: { error_class: '' }, code: 'c' }), 'c');
  });
});

describe('matchesNonRetryable', () => {
  const patterns = ['validation.payload_invalid', 'auth.*'];

  for (const type of ['validation.payload_invalid', 'auth.token_expired', 'auth.forbidden']) {
    it(`matches ${type}`, () => assert.equal(matchesNonRetryable(patterns, type), true));
  }
  for (const type of [
    'validation.schema_error',
    'auth',
    'external.auth.failure',
    'authx.y',
    'validation.payload_invalid.extra',
    'Auth.token_expired',
    '',
  ]) {
    it(`does not match ${JSON.stringify(type)}`, () =>
      assert.equal(matchesNonRetryable(patterns, type), false));
  }

  it('matches nested types under a prefix', () => {
    assert.equal(matchesNonRetryable(['auth.*'], 'auth.token.expired'), true);
  });

  it('is case-sensitive (suite: Auth.* vs Auth.TokenExpired)', () => {
    assert.equal(matchesNonRetryable(['Auth.*'], 'Auth.TokenExpired'), true);
    assert.equal(matchesNonRetryable(['auth.*'], 'Auth.TokenExpired'), false);
    assert.equal(matchesNonRetryable(['FatalError'], 'FatalError'), true);
    assert.equal(matchesNonRetryable(['fatalerror'], 'FatalError'), false);
  });

  it('treats other wildcards literally', () => {
    assert.equal(matchesNonRetryable(['*'], 'anything'), false);
    assert.equal(matchesNonRetryable(['auth*'], 'auth.x'), false);
    assert.equal(matchesNonRetryable(['auth*'], 'auth*'), true);
  });

  it('matches nothing with an empty list', () => {
    assert.equal(matchesNonRetryable([], 'auth.x'), false);
  });
});

describe('decideFailure', () => {
  const plain: FailureReport = { code: 'handler_error', message: 'boom' };

  it('requeue returns the job to available before anything else', () => {
    assert.deepEqual(
      decideFailure({
        attempt: 3,
        policy: policy({ max_attempts: 3 }),
        error: plain,
        requeue: true,
      }),
      { next: 'available' },
    );
    assert.deepEqual(
      decideFailure({
        attempt: 1,
        policy: policy(),
        error: { code: 'DEAD_LETTER' },
        requeue: true,
      }),
      { next: 'available' },
    );
  });

  it('requeue false takes the normal path', () => {
    assert.equal(
      decideFailure({ attempt: 1, policy: policy(), error: plain, requeue: false }).next,
      'retryable',
    );
  });

  describe('handler directives', () => {
    for (const code of ['DISCARD', 'discard', 'FAIL', 'Fail']) {
      it(`${code} discards without dead-lettering, even with attempts left`, () => {
        assert.deepEqual(
          decideFailure({
            attempt: 1,
            policy: policy({ max_attempts: 10, on_exhaustion: 'dead_letter' }),
            error: { code },
          }),
          { next: 'discarded', deadLetter: false, reason: 'discard_directive' },
        );
      });
    }

    for (const code of ['DEAD_LETTER', 'dead_letter']) {
      it(`${code} dead-letters even with on_exhaustion discard`, () => {
        assert.deepEqual(
          decideFailure({
            attempt: 1,
            policy: policy({ max_attempts: 10, on_exhaustion: 'discard' }),
            error: { code },
          }),
          { next: 'discarded', deadLetter: true, reason: 'dead_letter_directive' },
        );
      });
    }

    it('RETRY follows the normal policy', () => {
      const p = policy({ max_attempts: 3 });
      assert.deepEqual(decideFailure({ attempt: 1, policy: p, error: { code: 'RETRY' } }), {
        next: 'retryable',
        delayMs: 1000,
      });
      assert.equal(
        decideFailure({ attempt: 3, policy: p, error: { code: 'retry' } }).next,
        'discarded',
      );
    });

    it('directives win over retryable: true', () => {
      assert.equal(
        decideFailure({ attempt: 1, policy: policy(), error: { code: 'DISCARD', retryable: true } })
          .next,
        'discarded',
      );
    });
  });

  describe('non-retryable errors', () => {
    it('retryable: false discards at once and applies on_exhaustion', () => {
      const error: FailureReport = { ...plain, retryable: false };
      assert.deepEqual(decideFailure({ attempt: 1, policy: policy({ max_attempts: 5 }), error }), {
        next: 'discarded',
        deadLetter: false,
        reason: 'non_retryable',
      });
      assert.deepEqual(
        decideFailure({
          attempt: 1,
          policy: policy({ max_attempts: 5, on_exhaustion: 'dead_letter' }),
          error,
        }),
        { next: 'discarded', deadLetter: true, reason: 'non_retryable' },
      );
    });

    it('a listed type discards at once (type field)', () => {
      const p = policy({ max_attempts: 5, non_retryable_errors: ['auth.*'] });
      assert.deepEqual(
        decideFailure({ attempt: 1, policy: p, error: { type: 'auth.token_expired' } }),
        { next: 'discarded', deadLetter: false, reason: 'non_retryable' },
      );
    });

    it('a listed type discards at once (suite: details.error_class)', () => {
      const p = policy({ max_attempts: 5, non_retryable_errors: ['Auth.*'] });
      const error: FailureReport = {
        code: 'handler_error',
        message: 'token expired',
        details: { error_class: 'Auth.TokenExpired' },
      };
      assert.equal(decideFailure({ attempt: 1, policy: p, error }).next, 'discarded');
    });

    it('a listed code matches when no type is given', () => {
      const p = policy({ non_retryable_errors: ['timeout'] });
      assert.equal(
        decideFailure({ attempt: 1, policy: p, error: { code: 'timeout' } }).next,
        'discarded',
      );
    });

    it('an unlisted type is retried', () => {
      const p = policy({ non_retryable_errors: ['auth.*'] });
      assert.equal(
        decideFailure({ attempt: 1, policy: p, error: { type: 'external.auth.failure' } }).next,
        'retryable',
      );
    });

    it('retryable: true does not override a listed type', () => {
      const p = policy({ non_retryable_errors: ['fatal'] });
      assert.equal(
        decideFailure({ attempt: 1, policy: p, error: { type: 'fatal', retryable: true } }).next,
        'discarded',
      );
    });
  });

  describe('exhaustion', () => {
    it('max_attempts 3: retries after attempts 1 and 2, discards after 3', () => {
      const p = policy({ max_attempts: 3 });
      assert.deepEqual(decideFailure({ attempt: 1, policy: p, error: plain }), {
        next: 'retryable',
        delayMs: 1000,
      });
      assert.deepEqual(decideFailure({ attempt: 2, policy: p, error: plain }), {
        next: 'retryable',
        delayMs: 2000,
      });
      assert.deepEqual(decideFailure({ attempt: 3, policy: p, error: plain }), {
        next: 'discarded',
        deadLetter: false,
        reason: 'exhausted',
      });
    });

    it('discards beyond max_attempts too', () => {
      assert.equal(
        decideFailure({ attempt: 7, policy: policy({ max_attempts: 3 }), error: plain }).next,
        'discarded',
      );
    });

    it('max_attempts 1 discards on the first failure', () => {
      assert.deepEqual(
        decideFailure({ attempt: 1, policy: policy({ max_attempts: 1 }), error: plain }),
        {
          next: 'discarded',
          deadLetter: false,
          reason: 'exhausted',
        },
      );
    });

    it('max_attempts 0 behaves like 1', () => {
      assert.deepEqual(
        decideFailure({ attempt: 1, policy: policy({ max_attempts: 0 }), error: plain }),
        {
          next: 'discarded',
          deadLetter: false,
          reason: 'exhausted',
        },
      );
    });

    it('dead-letters on exhaustion when on_exhaustion is dead_letter', () => {
      assert.deepEqual(
        decideFailure({
          attempt: 2,
          policy: policy({ max_attempts: 2, on_exhaustion: 'dead_letter' }),
          error: plain,
        }),
        { next: 'discarded', deadLetter: true, reason: 'exhausted' },
      );
    });
  });

  describe('retry delay', () => {
    it('uses the failed attempt as n', () => {
      const p = policy({ max_attempts: 10, backoff_strategy: 'linear', initial_interval: 'PT5S' });
      assert.deepEqual(decideFailure({ attempt: 4, policy: p, error: plain }), {
        next: 'retryable',
        delayMs: 20_000,
      });
    });

    it('passes the random source through to the jitter', () => {
      const p = policy({ jitter: true, max_attempts: 5 });
      assert.deepEqual(
        decideFailure({ attempt: 2, policy: p, error: plain }, () => 0),
        {
          next: 'retryable',
          delayMs: 1000,
        },
      );
    });

    it('applies to a nack with no error details at all', () => {
      assert.equal(decideFailure({ attempt: 1, policy: policy(), error: {} }).next, 'retryable');
    });
  });
});
