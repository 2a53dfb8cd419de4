/**
 * NotifyCoalescer (pure timing logic, no database): the first enqueue of a
 * window NOTIFYs itself, later ones within it leave it to one trailing
 * NOTIFY, sent once they committed.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { NotifyCoalescer } from '../src/notify-coalescer.ts';

/** A coalescer with a long window, whose sends are counted and awaitable. */
function coalescer(windowMs = 60_000) {
  let sends = 0;
  let sent: () => void = () => {};
  let next = new Promise<void>((resolve) => {
    sent = resolve;
  });
  const errors: Error[] = [];
  const wakes = new NotifyCoalescer(
    async () => {
      sends++;
      const resolve = sent;
      next = new Promise<void>((r) => {
        sent = r;
      });
      resolve();
    },
    (error) => errors.push(error),
    windowMs,
  );
  return { wakes, errors, sends: () => sends, nextSend: () => next };
}

/** After the timers phase: every timer due with the one that just fired has fired too. */
const afterTimers = () => new Promise((resolve) => setImmediate(resolve));

describe('NotifyCoalescer', () => {
  it('the first statement of a window NOTIFYs itself; the next ones in it do not', () => {
    const { wakes, sends } = coalescer();
    assert.equal(wakes.take(), true);
    assert.equal(wakes.take(), false);
    assert.equal(wakes.take(), false);
    assert.equal(sends(), 0, 'nothing sent on its own');
    wakes.close();
  });

  it('skipped statements that committed get one NOTIFY at the window end', async () => {
    const { wakes, sends, nextSend, errors } = coalescer(20);
    assert.equal(wakes.take(), true);
    assert.equal(wakes.take(), false);
    wakes.owe();
    wakes.owe();
    wakes.owe();
    await nextSend();
    await afterTimers();
    assert.equal(sends(), 1, 'three owed, one sent');
    // The trailing NOTIFY opened a window of its own.
    assert.equal(wakes.take(), false);
    wakes.owe();
    await nextSend();
    assert.equal(sends(), 2);
    assert.deepEqual(errors, []);
    wakes.close();
  });

  it('a failed trailing NOTIFY is reported, not thrown', async () => {
    const errors: Error[] = [];
    let failed: () => void = () => {};
    const reported = new Promise<void>((resolve) => {
      failed = resolve;
    });
    const wakes = new NotifyCoalescer(
      async () => {
        throw new Error('connection lost');
      },
      (error) => {
        errors.push(error);
        failed();
      },
      1,
    );
    wakes.take();
    wakes.owe();
    await reported;
    assert.equal(errors[0]?.message, 'connection lost');
    wakes.close();
  });

  it('close() drops a NOTIFY still owed', async () => {
    const { wakes, sends } = coalescer(1);
    wakes.take();
    wakes.owe();
    wakes.close();
    wakes.owe();
    // Timers of one duration fire in the order they were set: this one, set
    // later, fires after the owed NOTIFY's would have (both 1 ms at most).
    await new Promise((resolve) => setTimeout(resolve, 1));
    await afterTimers();
    assert.equal(sends(), 0);
  });
});
