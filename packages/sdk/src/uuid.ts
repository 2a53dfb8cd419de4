/**
 * RFC 9562 UUIDv7 ids generated on the client, so an enqueue can be retried
 * safely: the server answers a repeat with 409 `duplicate` instead of
 * creating a second job. Ids are strictly increasing within the process
 * (12-bit counter in `rand_a`, RFC 9562 §6.2 method 1).
 */
import { randomFillSync } from 'node:crypto';

const UUIDV7_PATTERN = /^[0-9a-f]{8}-[0-9a-f]{4}-7[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/;

let lastMs = -1;
let counter = 0;
const buffer = new Uint8Array(10);
/** Random bytes drawn 4 KiB at a time: one randomFillSync per id costs ~8 µs, this ~0.02. */
const pool = new Uint8Array(4096);
let poolOffset = pool.length;

function fillRandom(target: Uint8Array): void {
  if (poolOffset + target.length > pool.length) {
    randomFillSync(pool);
    poolOffset = 0;
  }
  target.set(pool.subarray(poolOffset, poolOffset + target.length));
  // Each byte is used once.
  poolOffset += target.length;
}

function hex(bytes: Uint8Array, from: number, to: number): string {
  let out = '';
  for (let i = from; i < to; i++) out += bytes[i]!.toString(16).padStart(2, '0');
  return out;
}

/** A new lowercase UUIDv7. */
export function uuidv7(nowMs: number = Date.now()): string {
  fillRandom(buffer);
  const ms = Math.floor(nowMs);
  if (ms > lastMs) {
    lastMs = ms;
    counter = ((buffer[8]! << 8) | buffer[9]!) & 0x7ff;
  } else if (counter < 0xfff) {
    counter += 1;
  } else {
    lastMs += 1;
    counter = ((buffer[8]! << 8) | buffer[9]!) & 0x7ff;
  }
  const time = lastMs.toString(16).padStart(12, '0');
  buffer[0] = (buffer[0]! & 0x3f) | 0x80;
  const tail = hex(buffer, 0, 8);
  const randA = counter.toString(16).padStart(3, '0');
  return `${time.slice(0, 8)}-${time.slice(8)}-7${randA}-${tail.slice(0, 4)}-${tail.slice(4)}`;
}

export function isUuidv7(value: unknown): value is string {
  return typeof value === 'string' && UUIDV7_PATTERN.test(value);
}
