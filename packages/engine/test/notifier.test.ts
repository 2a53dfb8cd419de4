/**
 * The notifier never loses a wake-up that lands while a fetch is claiming:
 * a wait() given the generation read before the claim returns at once when
 * a notify happened since, and otherwise waits for the next one.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { Notifier } from '../src/notifier.ts';

describe('Notifier', () => {
  it('returns at once when notified after the generation was read', async () => {
    const notifier = new Notifier();
    const seen = notifier.generation;
    notifier.notify(); // lands while the fetch's claim is in flight
    await notifier.wait(60_000, undefined, seen);
    assert.equal(notifier.waiting, 0);
  });

  it('waits for the next notify when nothing happened since', async () => {
    const notifier = new Notifier();
    const seen = notifier.generation;
    const woken = notifier.wait(60_000, undefined, seen);
    assert.equal(notifier.waiting, 1, 'registered as a waiter');
    notifier.notify();
    await woken;
    assert.equal(notifier.waiting, 0);
  });

  it('an abort ends the wait', async () => {
    const notifier = new Notifier();
    const controller = new AbortController();
    const waiting = notifier.wait(60_000, controller.signal, notifier.generation);
    controller.abort();
    await waiting;
    assert.equal(notifier.waiting, 0);
  });
});
