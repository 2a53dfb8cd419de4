import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { createUuidv7Generator, isUuidv7, uuidv7 } from '../src/uuid.ts';

/** The 48-bit timestamp field of a UUIDv7. */
function timestampOf(id: string): number {
  return Number.parseInt(id.replaceAll('-', '').slice(0, 12), 16);
}

/** The 12-bit rand_a field (our counter). */
function counterOf(id: string): number {
  return Number.parseInt(id.slice(15, 18), 16);
}

function assertStrictlyIncreasing(ids: string[]): void {
  for (let i = 1; i < ids.length; i += 1) {
    assert.ok(ids[i - 1]! < ids[i]!, `id ${i} not greater: ${ids[i - 1]} >= ${ids[i]}`);
  }
}

/** Deterministic byte source so counter seeds are predictable. */
function constantBytes(value: number) {
  return (size: number) => new Uint8Array(size).fill(value);
}

describe('uuidv7', () => {
  it('produces lowercase hyphenated version-7 ids with the RFC variant', () => {
    for (let i = 0; i < 1000; i += 1) {
      const id = uuidv7();
      assert.match(id, /^[0-9a-f]{8}-[0-9a-f]{4}-7[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/);
      assert.equal(isUuidv7(id), true);
    }
  });

  it('encodes the current time in the first 48 bits', () => {
    const before = Date.now();
    const id = createUuidv7Generator()();
    const after = Date.now();
    assert.ok(timestampOf(id) >= before && timestampOf(id) <= after);
  });

  it('encodes an explicit nowMs', () => {
    const generate = createUuidv7Generator();
    const now = Date.UTC(2024, 0, 15, 10, 30, 0, 123);
    const id = generate(now);
    assert.equal(timestampOf(id), now);
    assert.equal(
      id.slice(0, 13),
      `${now.toString(16).padStart(12, '0').slice(0, 8)}-${now.toString(16).padStart(12, '0').slice(8)}`,
    );
  });

  it('is strictly increasing over 10,000 ids in a tight loop', () => {
    const ids: string[] = [];
    for (let i = 0; i < 10_000; i += 1) ids.push(uuidv7());
    assertStrictlyIncreasing(ids);
    assert.equal(new Set(ids).size, ids.length);
  });

  it('is strictly increasing over 10,000 ids with a fixed nowMs', () => {
    const generate = createUuidv7Generator();
    const now = Date.UTC(2030, 5, 1);
    const ids: string[] = [];
    for (let i = 0; i < 10_000; i += 1) ids.push(generate(now));
    assertStrictlyIncreasing(ids);
    assert.equal(timestampOf(ids[0]!), now);
    // 10,000 ids cannot fit in one 12-bit counter, so the timestamp must have been carried.
    assert.ok(timestampOf(ids.at(-1)!) > now);
    assert.ok(timestampOf(ids.at(-1)!) <= now + 5);
  });

  it('stays increasing on the shared generator with a fixed nowMs', () => {
    const now = Date.now();
    const ids: string[] = [];
    for (let i = 0; i < 10_000; i += 1) ids.push(uuidv7(now));
    assertStrictlyIncreasing(ids);
  });

  it('counts up within a millisecond and reseeds when time advances', () => {
    const generate = createUuidv7Generator(constantBytes(0x01));
    const seed = 0x101 & 0x7ff;
    const a = generate(1000);
    const b = generate(1000);
    const c = generate(1001);
    assert.equal(counterOf(a), seed);
    assert.equal(counterOf(b), seed + 1);
    assert.equal(timestampOf(c), 1001);
    assert.equal(counterOf(c), seed);
  });

  it('carries into the timestamp when the counter overflows', () => {
    // Seed 0x7ff is the largest possible, leaving 0x800 more ids in the millisecond.
    const generate = createUuidv7Generator(constantBytes(0xff));
    const ids: string[] = [];
    for (let i = 0; i <= 0x801; i += 1) ids.push(generate(5000));
    assert.equal(counterOf(ids[0]!), 0x7ff);
    assert.equal(counterOf(ids[0x800]!), 0xfff);
    assert.equal(timestampOf(ids[0x800]!), 5000);
    assert.equal(timestampOf(ids[0x801]!), 5001);
    assert.equal(counterOf(ids[0x801]!), 0x7ff);
    assertStrictlyIncreasing(ids);
  });

  it('never goes backwards when the clock does', () => {
    const generate = createUuidv7Generator();
    const first = generate(10_000);
    const second = generate(9_000);
    assert.ok(second > first);
    assert.equal(timestampOf(second), 10_000);
  });

  it('sets the variant bits whatever the random bytes', () => {
    for (const byte of [0x00, 0x3f, 0x40, 0x7f, 0xc0, 0xff]) {
      const id = createUuidv7Generator(constantBytes(byte))(1);
      assert.equal(isUuidv7(id), true, id);
    }
  });

  it('rejects timestamps outside the 48-bit range', () => {
    const generate = createUuidv7Generator();
    assert.throws(() => generate(-1), RangeError);
    assert.throws(() => generate(2 ** 48), RangeError);
    assert.throws(() => generate(Number.NaN), RangeError);
  });
});

describe('isUuidv7', () => {
  it('accepts a v7 id', () => {
    assert.equal(isUuidv7('01890a5d-ac96-774b-bcce-b302099a8057'), true);
  });

  const rejected: unknown[] = [
    '',
    '550e8400-e29b-41d4-a716-446655440000',
    crypto.randomUUID(),
    '01890A5D-AC96-774B-BCCE-B302099A8057',
    '01890a5d-ac96-774b-bcce-b302099a805',
    '01890a5d-ac96-774b-bcce-b302099a80577',
    '01890a5dac96774bbcceb302099a8057',
    '01890a5d-ac96-774b-7cce-b302099a8057',
    '01890a5d-ac96-774b-ccce-b302099a8057',
    '{01890a5d-ac96-774b-bcce-b302099a8057}',
    ' 01890a5d-ac96-774b-bcce-b302099a8057',
    '01890a5d-ac96-774b-bcce-b302099a8057\n',
    'g1890a5d-ac96-774b-bcce-b302099a8057',
    null,
    undefined,
    42,
  ];
  for (const value of rejected) {
    it(`rejects ${JSON.stringify(value)}`, () => {
      assert.equal(isUuidv7(value), false);
    });
  }
});
