// Generated from @ojs/core (packages/core/src/uuid.ts) by scripts/generate-sdk.ts; do not edit.
// Change the core module and run `node scripts/generate-sdk.ts`.

/**
 * RFC 9562 UUIDv7 job ids.
 *
 * Ids double as a creation-order sort key, so they must be strictly increasing within the
 * process even when many are made in the same millisecond. The 12-bit `rand_a` field is used
 * as a counter (RFC 9562 §6.2, method 1); when it overflows, the timestamp field is advanced
 * by one millisecond, which keeps the order without waiting for the clock.
 */

import { randomBytes } from 'node:crypto';

const UUIDV7_PATTERN = /^[0-9a-f]{8}-[0-9a-f]{4}-7[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/;

const COUNTER_MAX = 0xfff;
/** Seeds stay in the lower half so at least 2048 ids fit in a millisecond before a carry. */
const COUNTER_SEED_MASK = 0x7ff;
const MAX_TIMESTAMP_MS = 2 ** 48 - 1;

export type RandomBytesSource = (size: number) => Uint8Array;

/**
 * randomBytes from a pool: one system call per 4 KiB instead of one per id
 * (the call dominated id generation under load).
 */
function pooledRandomBytes(): RandomBytesSource {
  const POOL = 4096;
  let pool = randomBytes(POOL);
  let offset = 0;
  return (size) => {
    if (offset + size > POOL) {
      pool = randomBytes(POOL);
      offset = 0;
    }
    offset += size;
    return pool.subarray(offset - size, offset);
  };
}

/**
 * A generator with its own monotonic state. `uuidv7` uses a shared one; separate generators
 * exist so tests can observe the layout without disturbing (or depending on) that state.
 */
export function createUuidv7Generator(
  random: RandomBytesSource = randomBytes,
): (nowMs?: number) => string {
  let lastMs = -1;
  let counter = 0;

  const seedCounter = (): number => {
    const bytes = random(2);
    return ((bytes[0]! << 8) | bytes[1]!) & COUNTER_SEED_MASK;
  };

  return (nowMs = Date.now()) => {
    checkTimestamp(nowMs);
    const ms = Math.floor(nowMs);
    if (ms > lastMs) {
      lastMs = ms;
      counter = seedCounter();
    } else if (counter < COUNTER_MAX) {
      // Same millisecond, or the clock stepped back: stay on lastMs and count up.
      counter += 1;
    } else {
      lastMs += 1;
      counter = seedCounter();
    }
    return formatUuidv7(lastMs, counter, random(8));
  };
}

export const uuidv7: (nowMs?: number) => string = createUuidv7Generator(pooledRandomBytes());

export function isUuidv7(text: unknown): text is string {
  return typeof text === 'string' && UUIDV7_PATTERN.test(text);
}

function checkTimestamp(nowMs: number): void {
  if (!Number.isFinite(nowMs) || nowMs < 0 || nowMs > MAX_TIMESTAMP_MS) {
    throw new RangeError(`UUIDv7 timestamp must be within 0..2^48-1 ms (got ${nowMs})`);
  }
}

/** Two lowercase hex digits per byte value, built once (formatting runs per id and per event). */
const HEX = Array.from({ length: 256 }, (_, byte) => byte.toString(16).padStart(2, '0'));

/** 48-bit ms | ver 7 | 12-bit counter | variant 0b10 | 62 random bits. */
function formatUuidv7(ms: number, counter: number, randB: Uint8Array): string {
  const time = ms.toString(16).padStart(12, '0');
  const randA = counter.toString(16).padStart(3, '0');
  // The top two bits of rand_b's first byte carry the RFC variant.
  const variant = HEX[(randB[0]! & 0x3f) | 0x80]!;
  return (
    `${time.slice(0, 8)}-${time.slice(8)}-7${randA}-${variant}${HEX[randB[1]!]}-` +
    `${HEX[randB[2]!]}${HEX[randB[3]!]}${HEX[randB[4]!]}${HEX[randB[5]!]}${HEX[randB[6]!]}${HEX[randB[7]!]}`
  );
}
