/**
 * The database clock (DESIGN §4 "Time"): leases and schedules are decided
 * on the shared store's time (PostgreSQL clock_timestamp(), Redis TIME), so
 * several server processes on different machines agree even when their own
 * clocks drift. Pure arithmetic over samples a store takes.
 *
 * Clock.now() must be synchronous and cheap (it is read on every request),
 * so instead of a round trip per reading the store measures the offset
 * between the local monotonic clock and the database's clock:
 * a few samples, keeping the one with the shortest round trip, and taking
 * the database reading as the midpoint of that trip (error <= RTT / 2,
 * sub-millisecond on a LAN). The offset is re-measured periodically
 * (default every 60 s), which also absorbs drift of the local oscillator.
 * Readings are based on performance.now(), not Date.now(), so a step of the
 * local wall clock between two measurements cannot move the result; and a
 * re-measurement that moves the offset backwards never makes now() go back
 * (it holds still until the database clock catches up).
 */
import type { Clock } from './clock.ts';

export interface ClockSample {
  /** Database time in epoch ms. */
  dbMs: number;
  /** Local monotonic readings (epoch-based ms) before and after the query. */
  sentAt: number;
  receivedAt: number;
}

export function localNow(): number {
  return performance.timeOrigin + performance.now();
}

export class DatabaseClock implements Clock {
  #offset = 0;
  #last = 0;
  #synced = false;

  /** Epoch ms on the database's clock. */
  now(): number {
    const reading = Math.floor(localNow() + this.#offset);
    if (reading > this.#last) this.#last = reading;
    return this.#last;
  }

  /** Offset (ms) added to the local clock; 0 until the first measurement. */
  get offsetMs(): number {
    return this.#offset;
  }

  get synced(): boolean {
    return this.#synced;
  }

  /** Adopts the best of a set of samples (shortest round trip). */
  apply(samples: ClockSample[]): void {
    let best: ClockSample | undefined;
    for (const sample of samples) {
      if (best === undefined || sample.receivedAt - sample.sentAt < best.receivedAt - best.sentAt) {
        best = sample;
      }
    }
    if (best === undefined) return;
    this.#offset = best.dbMs - (best.sentAt + best.receivedAt) / 2;
    this.#synced = true;
  }

  /** Takes `count` samples with `read` (one database round trip each) and applies them. */
  async sync(read: () => Promise<number>, count = 3): Promise<void> {
    const samples: ClockSample[] = [];
    for (let i = 0; i < count; i++) {
      const sentAt = localNow();
      const dbMs = await read();
      samples.push({ dbMs, sentAt, receivedAt: localNow() });
    }
    this.apply(samples);
  }
}
