/**
 * ClaimedJobs: the bounded keep of claimed jobs the stores settle from
 * (decision 0076). Its users' behaviour is tested in each store's
 * claimed-jobs.test.ts.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { ClaimedJobs, type JobRecord, KEPT_CHARS, KEPT_CHARS_PER_JOB } from '../src/index.ts';

const job = (id: string) => ({ id }) as JobRecord;

describe('ClaimedJobs', () => {
  it('keeps at most max copies, dropping the oldest first; take hands a copy out once', () => {
    const kept = new ClaimedJobs(2);
    kept.keep('a', 10, () => job('a'));
    kept.keep('b', 10, () => job('b'));
    kept.keep('a', 10, () => job('a')); // kept again: now the newest
    kept.keep('c', 10, () => job('c')); // drops b, the oldest
    assert.equal(kept.size, 2);
    assert.equal(kept.take('b'), undefined);
    assert.equal(kept.take('a')?.id, 'a');
    assert.equal(kept.take('a'), undefined);
    assert.equal(kept.take('c')?.id, 'c');
    assert.equal(kept.size, 0);
  });

  it('max 0 keeps nothing and makes no copy', () => {
    const kept = new ClaimedJobs(0);
    kept.keep('a', 10, () => assert.fail('no copy when nothing is kept'));
    assert.equal(kept.size, 0);
    assert.equal(kept.take('a'), undefined);
  });

  it('a job longer than KEPT_CHARS_PER_JOB is not kept, and its older copy is dropped', () => {
    const kept = new ClaimedJobs(10);
    kept.keep('a', 10, () => job('a'));
    kept.keep('a', KEPT_CHARS_PER_JOB + 1, () => assert.fail('not copied'));
    assert.equal(kept.take('a'), undefined);
  });

  it('all copies together stay within KEPT_CHARS: the oldest go first', () => {
    const kept = new ClaimedJobs(1_000_000);
    const count = Math.floor(KEPT_CHARS / KEPT_CHARS_PER_JOB);
    for (let i = 0; i <= count; i++) kept.keep(`j${i}`, KEPT_CHARS_PER_JOB, () => job(`j${i}`));
    assert.equal(kept.size, count);
    assert.equal(kept.take('j0'), undefined);
    assert.equal(kept.take(`j${count}`)?.id, `j${count}`);
    // Taking gives its characters back: one more fits without dropping another.
    kept.keep('extra', KEPT_CHARS_PER_JOB, () => job('extra'));
    assert.equal(kept.take('j1')?.id, 'j1');
  });

  it('clear drops every copy and its characters', () => {
    const kept = new ClaimedJobs(1_000_000);
    const count = Math.floor(KEPT_CHARS / KEPT_CHARS_PER_JOB);
    for (let i = 0; i < count; i++) kept.keep(`j${i}`, KEPT_CHARS_PER_JOB, () => job(`j${i}`));
    kept.clear();
    assert.equal(kept.size, 0);
    for (let i = 0; i < count; i++) kept.keep(`k${i}`, KEPT_CHARS_PER_JOB, () => job(`k${i}`));
    assert.equal(kept.take('k0')?.id, 'k0');
  });
});
