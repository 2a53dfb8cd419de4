/**
 * The column arrays of the hot-path statements (decision 0117) are array
 * literals built by hand (rows.ts arrayLiteral, keysLiteral), not by
 * node-postgres: PostgreSQL must read back exactly the values given,
 * whatever characters a stored name, id, key or error text holds.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { arrayLiteral, keysLiteral } from '../src/rows.ts';
import { unavailable, withAdmin } from './helpers.ts';

const TEXTS = [
  'plain',
  '',
  'NULL',
  'null',
  'with space',
  ' leading and trailing ',
  'comma,inside',
  '{braces}',
  'quote " inside',
  'back\\slash',
  'both \\" at once',
  '\\',
  '"',
  'new\nline\ttab',
  'unicode é 漢字 🎉',
];

describe('array literals', async () => {
  const skip = await unavailable();

  it('reads back every text as given, NULL as NULL', { skip }, async () => {
    const values = [...TEXTS, null];
    const read = await withAdmin(async (client) => {
      const result = await client.query('SELECT $1::text[] AS a', [arrayLiteral(values)]);
      return result.rows[0].a as (string | null)[];
    });
    assert.deepEqual(read, values);
  });

  it('reads back numbers exactly, and booleans', { skip }, async () => {
    const numbers = [0, -1, 42, 2 ** 53 - 1, 1.5, -0.001, 1e-7, 123456789.123];
    const read = await withAdmin(async (client) => {
      const result = await client.query('SELECT $1::float8[] AS n, $2::boolean[] AS b', [
        arrayLiteral(numbers),
        arrayLiteral([true, false, null]),
      ]);
      return result.rows[0] as { n: number[]; b: (boolean | null)[] };
    });
    assert.deepEqual(read.n, numbers);
    assert.deepEqual(read.b, [true, false, null]);
  });

  it("nests key lists as elements of an outer text array (the settle statement's doc_unset)", {
    skip,
  }, async () => {
    const lists = [['progress', 'lease_until'], [], ['odd key', 'NULL', 'q"uote', 'b\\s', '{x}']];
    const read = await withAdmin(async (client) => {
      const result = await client.query(
        'SELECT k::text[] AS keys FROM unnest($1::text[]) WITH ORDINALITY AS u(k, i) ORDER BY i',
        [arrayLiteral(lists.map(keysLiteral))],
      );
      return result.rows.map((row) => row.keys as string[]);
    });
    assert.deepEqual(read, lists);
  });
});
