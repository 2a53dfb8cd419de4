import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { describe, it } from 'node:test';
import { canonicalJson } from '../src/canonical-json.ts';
import type { JobRecord, UniquePolicy } from '../src/job-types.ts';
import { JOB_STATES, type JobState } from '../src/states.ts';
import { computeUniqueKey, uniqueConflicts, uniqueKeyMaterial } from '../src/unique.ts';
import { parseVersion } from '../src/version.ts';

type Material = Pick<JobRecord, 'type' | 'queue' | 'args' | 'meta' | 'extensions' | 'version_num'>;

function material(overrides: Partial<Material> = {}): Material {
  return {
    type: 'email.send',
    queue: 'default',
    args: [{ to: 'a@example.com', template: 'welcome' }],
    meta: {},
    extensions: {},
    ...overrides,
  };
}

function policy(overrides: Partial<UniquePolicy> = {}): UniquePolicy {
  return {
    keys: ['type', 'queue', 'args'],
    states: ['scheduled', 'available', 'pending', 'active', 'retryable'],
    on_conflict: 'reject',
    ...overrides,
  };
}

const key = (m: Partial<Material>, p: Partial<UniquePolicy> = {}) =>
  computeUniqueKey(material(m), policy(p));

describe('canonicalJson', () => {
  it('sorts object keys at every level and emits compact JSON', () => {
    assert.equal(
      canonicalJson({ b: 1, a: { d: [3, { z: 1, y: 2 }], c: null } }),
      '{"a":{"c":null,"d":[3,{"y":2,"z":1}]},"b":1}',
    );
  });

  it('keeps array order and JSON scalars', () => {
    assert.equal(canonicalJson([2, 1, 'x', true, null]), '[2,1,"x",true,null]');
    assert.equal(canonicalJson(undefined), 'null');
  });
});

describe('computeUniqueKey', () => {
  it('is a prefixed lowercase SHA-256 of the canonical material', () => {
    const m = material();
    const p = policy();
    const expected = createHash('sha256')
      .update(canonicalJson(uniqueKeyMaterial(m, p)))
      .digest('hex');
    assert.equal(computeUniqueKey(m, p), `ojs:unique:${expected}`);
    assert.match(computeUniqueKey(m, p), /^ojs:unique:[0-9a-f]{64}$/);
  });

  it('is deterministic', () => {
    assert.equal(key({}), key({}));
  });

  it('is equal for equal material regardless of object key order', () => {
    const a = key({ args: [{ a: 1, b: { c: 2, d: [1, { e: 3, f: 4 }] } }] });
    const b = key({ args: [{ b: { d: [1, { f: 4, e: 3 }], c: 2 }, a: 1 }] });
    assert.equal(a, b);
  });

  it('is equal for meta with reordered keys when meta is a dimension', () => {
    const p = { keys: ['type', 'meta'], meta_keys: ['tenant', 'region'] };
    assert.equal(
      key({ meta: { tenant: 't1', region: 'eu', noise: 1 } }, p),
      key({ meta: { region: 'eu', noise: 2, tenant: 't1' } }, p),
    );
  });

  it('differs when type, queue or args differ', () => {
    const base = key({});
    assert.notEqual(key({ type: 'email.other' }), base);
    assert.notEqual(key({ queue: 'email' }), base);
    assert.notEqual(key({ args: [{ to: 'b@example.com', template: 'welcome' }] }), base);
    assert.notEqual(key({ args: [] }), base);
  });

  it('treats array order in args as significant', () => {
    assert.notEqual(key({ args: [1, 2] }), key({ args: [2, 1] }));
  });

  it('distinguishes value types (1 vs "1")', () => {
    assert.notEqual(key({ args: [1] }), key({ args: ['1'] }));
  });

  it('ignores dimensions the policy does not name', () => {
    const p = { keys: ['type'] };
    assert.equal(key({ args: [1] }, p), key({ args: [2] }, p));
    assert.equal(key({ queue: 'a' }, p), key({ queue: 'b' }, p));
    assert.notEqual(key({ type: 'x.a' }, p), key({ type: 'x.b' }, p));
  });

  it('ignores meta unless the policy names it', () => {
    assert.equal(key({ meta: { a: 1 } }), key({ meta: { a: 2 } }));
  });

  it('includes the job version (compared as a version) when keys name it', () => {
    const p = { keys: ['type', 'version'] };
    const v = (text: string) => parseVersion(text)!;
    assert.notEqual(key({ version_num: v('1') }, p), key({ version_num: v('2') }, p));
    // "2.0", 2 and "2.0.0" are one version.
    assert.equal(key({ version_num: v('2.0') }, p), key({ version_num: v('2.0.0') }, p));
    assert.equal(
      key({ extensions: { other: 1 }, version_num: v('1') }, p),
      key({ version_num: v('1') }, p),
    );
  });

  describe('args_keys', () => {
    const p = { keys: ['type', 'args'], args_keys: ['user_id'] };

    it('selects fields of args[0]: other fields do not matter', () => {
      assert.equal(
        key({ args: [{ user_id: 42, nonce: 'a' }] }, p),
        key({ args: [{ nonce: 'b', user_id: 42 }] }, p),
      );
      assert.equal(
        key({ args: [{ user_id: 42 }, 'extra'] }, p),
        key({ args: [{ user_id: 42 }] }, p),
      );
    });

    it('differs when a selected field differs', () => {
      assert.notEqual(key({ args: [{ user_id: 42 }] }, p), key({ args: [{ user_id: 43 }] }, p));
    });

    it('keeps the original value types of selected fields', () => {
      assert.notEqual(key({ args: [{ user_id: 42 }] }, p), key({ args: [{ user_id: '42' }] }, p));
    });

    it('puts only the selected fields into the material', () => {
      const m = uniqueKeyMaterial(material({ args: [{ user_id: 42, nonce: 'a' }] }), policy(p));
      assert.deepEqual(m, { type: 'email.send', args: { user_id: 42 } });
    });

    it('meta_keys select fields of meta', () => {
      const mp = { keys: ['type', 'meta'], meta_keys: ['tenant'] };
      assert.equal(
        key({ meta: { tenant: 'a', x: 1 } }, mp),
        key({ meta: { tenant: 'a', x: 2 } }, mp),
      );
      assert.notEqual(key({ meta: { tenant: 'a' } }, mp), key({ meta: { tenant: 'b' } }, mp));
    });
  });

  it('always includes the job type, even when keys omit it', () => {
    const p = { keys: ['args'] };
    assert.notEqual(
      key({ type: 'email.send', args: [1] }, p),
      key({ type: 'sms.send', args: [1] }, p),
    );
  });

  it('normalises strings to NFC before hashing', () => {
    const composed = 'caf\u00e9';
    const decomposed = 'cafe\u0301';
    assert.notEqual(composed, decomposed);
    assert.equal(key({ args: [composed] }), key({ args: [decomposed] }));
  });
});

describe('uniqueConflicts', () => {
  const T = Date.UTC(2026, 0, 1);
  const existing = (state: JobState) => ({ state }) as JobRecord;

  it('conflicts only while the existing job is in one of the policy states', () => {
    const p = policy({ states: ['available', 'active'] });
    for (const state of JOB_STATES) {
      assert.equal(
        uniqueConflicts(existing(state), p, T, T),
        state === 'available' || state === 'active',
        state,
      );
    }
  });

  it('a completed job no longer blocks with states ["available"]', () => {
    const p = policy({ states: ['available'] });
    assert.equal(uniqueConflicts(existing('completed'), p, T, T), false);
    assert.equal(uniqueConflicts(existing('available'), p, T, T), true);
  });

  it('the default states (all non-terminal) never include a terminal job', () => {
    for (const state of ['completed', 'cancelled', 'discarded'] as const) {
      assert.equal(uniqueConflicts(existing(state), policy(), T, T + 1), false, state);
    }
  });

  it('without a period the lock lasts as long as the state matches', () => {
    assert.equal(uniqueConflicts(existing('available'), policy(), T, T + 365 * 86_400_000), true);
  });

  it('a period bounds the lock: conflict before it elapses, none at or after', () => {
    const p = policy({ period_ms: 2000, period: 'PT2S' });
    assert.equal(uniqueConflicts(existing('available'), p, T, T), true);
    assert.equal(uniqueConflicts(existing('available'), p, T, T + 1999), true);
    assert.equal(uniqueConflicts(existing('available'), p, T, T + 2000), false);
    assert.equal(uniqueConflicts(existing('available'), p, T, T + 3000), false);
  });

  it('the states filter applies within the period too', () => {
    const p = policy({ period_ms: 60_000, states: ['available'] });
    assert.equal(uniqueConflicts(existing('active'), p, T, T + 1), false);
  });
});
