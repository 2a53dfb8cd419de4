/**
 * Job versioning primitives (seed 004 §5, §8, §15.1; features §8): version
 * identifiers, worker version ranges, the routing predicate and the
 * `type@version` split.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { OjsError } from '../src/errors.ts';
import {
  handlersAdmit,
  majorOf,
  parseHandlers,
  parseVersion,
  parseVersionRange,
  rangeAdmits,
  splitTypeVersion,
  type VersionRange,
  versionNumber,
} from '../src/version.ts';

/** The comparable number of a version that must parse. */
function v(text: string | number): number {
  const parsed = parseVersion(text);
  assert.notEqual(parsed, null, `${String(text)} should parse`);
  return parsed as number;
}

function admits(range: string | VersionRange, version: string | undefined): boolean {
  const parsed = typeof range === 'string' ? parseVersionRange(range) : range;
  return rangeAdmits(parsed, version === undefined ? undefined : v(version));
}

/** Asserts `fn` throws an OjsError with this code (and field, when given). */
function assertOjsError(fn: () => unknown, code: string, field?: string): OjsError {
  let caught: unknown;
  try {
    fn();
  } catch (error) {
    caught = error;
  }
  assert.ok(caught instanceof OjsError, `expected an OjsError, got ${String(caught)}`);
  assert.equal(caught.code, code);
  if (field !== undefined) assert.equal(caught.details?.field, field);
  return caught;
}

describe('parseVersion', () => {
  it('accepts an integer, a major string, major.minor and major.minor.patch', () => {
    for (const form of [2, '2', '2.0', '2.0.0']) {
      assert.equal(typeof parseVersion(form), 'number', `form ${JSON.stringify(form)}`);
    }
    assert.equal(typeof parseVersion('2.0.1'), 'number');
    assert.equal(typeof parseVersion(0), 'number');
    assert.equal(typeof parseVersion('0.1'), 'number');
  });

  it('treats missing parts as 0: 2, "2", "2.0" and "2.0.0" are the same version (X-21)', () => {
    assert.equal(v(2), v('2'));
    assert.equal(v('2'), v('2.0'));
    assert.equal(v('2.0'), v('2.0.0'));
    assert.notEqual(v('2.0.1'), v('2.0'));
  });

  it('rejects malformed versions with null', () => {
    for (const bad of [
      '',
      ' ',
      'abc',
      'v2',
      'v2.0',
      '2.',
      '.2',
      '2..0',
      '2.0.0.0',
      '2.x',
      '02',
      '2.01',
      ' 2.0',
      '2.0 ',
      '-1',
      '1e3',
      '+2',
      '>=2.0',
      '*',
      -1,
      2.5,
      Number.NaN,
      Number.POSITIVE_INFINITY,
      null,
      undefined,
      true,
      {},
      [],
      ['2.0'],
    ]) {
      assert.equal(parseVersion(bad), null, `${JSON.stringify(bad)} must not parse`);
    }
  });

  it('orders numerically by major, then minor, then patch (not as text)', () => {
    const ordered = ['0.1', '0.9', '1.0', '1.0.1', '1.1', '1.2', '1.10', '2.0', '2.9.9', '10.0'];
    for (let i = 1; i < ordered.length; i++) {
      assert.ok(
        v(ordered[i - 1]!) < v(ordered[i]!),
        `${ordered[i - 1]} must sort before ${ordered[i]}`,
      );
    }
    assert.ok(v(3) > v('2.99'));
  });

  it('keeps the major recoverable from the packed number', () => {
    assert.equal(majorOf(v('2.0')), 2);
    assert.equal(majorOf(v('2.7.3')), 2);
    assert.equal(majorOf(v(10)), 10);
    assert.equal(majorOf(v('0.4')), 0);
  });

  it('versionNumber throws invalid_payload for a malformed version and names the field', () => {
    assert.equal(versionNumber('2.0'), v('2.0'));
    const error = assertOjsError(() => versionNumber('2.x'), 'invalid_payload', 'version');
    assert.match(error.message, /2\.x/);
    assertOjsError(
      () => versionNumber({}, 'rules[0].version'),
      'invalid_payload',
      'rules[0].version',
    );
  });

  it('distinguishes every version the pattern accepts (large parts stay ordered)', () => {
    assert.ok(v('9999.0.1') > v('9999.0.0'));
    assert.ok(v('2097151.65535.65535') > v('2097151.65535.65534'));
    assert.ok(v('2097151.65535.65535') <= Number.MAX_SAFE_INTEGER);
    // Parts beyond the packing are rejected rather than collided.
    assert.equal(parseVersion('2097152.0'), null);
    assert.equal(parseVersion('1.65536'), null);
  });
});

describe('parseVersionRange and rangeAdmits', () => {
  it('"*" (and an absent range) admits every version and unversioned jobs', () => {
    for (const range of [
      parseVersionRange('*'),
      parseVersionRange(undefined),
      parseVersionRange(null),
    ]) {
      assert.equal(range.any, true);
      for (const version of ['0.1', '1.0', '2.0', '99.99.99', undefined]) {
        assert.equal(admits(range, version), true, `* admits ${version}`);
      }
    }
    assert.equal(parseVersionRange('*').text, '*');
  });

  it('an exact "2.0" admits 2.0 and its patches, not 2.1, 1.9 or 3.0', () => {
    const range = parseVersionRange('2.0');
    assert.equal(range.any, false);
    assert.equal(range.text, '2.0');
    assert.equal(admits(range, '2.0'), true);
    assert.equal(admits(range, '2'), true);
    assert.equal(admits(range, '2.0.0'), true);
    assert.equal(admits(range, '2.0.7'), true);
    for (const no of ['2.1', '1.9', '1.0', '3.0', '0.2']) {
      assert.equal(admits(range, no), false, `2.0 must not admit ${no}`);
    }
    // "=2.0" means the same; a bare major (2 or "2") covers every 2.x.y.
    assert.deepEqual(parseVersionRange('=2.0').intervals, range.intervals);
    assert.deepEqual(parseVersionRange(2).intervals, parseVersionRange('2').intervals);
    assert.equal(admits(parseVersionRange(2), '2.1'), true);
    assert.equal(admits(parseVersionRange(2), '3.0'), false);
  });

  it('">=1.0 <3.0" admits [1.0, 3.0)', () => {
    const range = parseVersionRange('>=1.0 <3.0');
    for (const yes of ['1.0', '1.5', '2.0', '2.9', '2.99.99']) {
      assert.equal(admits(range, yes), true, `admits ${yes}`);
    }
    for (const no of ['0.9', '0.99.99', '3.0', '3.0.1', '4.0']) {
      assert.equal(admits(range, no), false, `rejects ${no}`);
    }
  });

  it('">=1.0, <2.0" (comma form of §15.1) equals the space form, with or without spaces', () => {
    const spaced = parseVersionRange('>=1.0 <2.0');
    for (const text of ['>=1.0, <2.0', '>=1.0,<2.0', ' >=1.0 ,  <2.0 ']) {
      const range = parseVersionRange(text);
      assert.deepEqual(range.intervals, spaced.intervals, text);
      assert.equal(admits(range, '1.0'), true);
      assert.equal(admits(range, '1.9'), true);
      assert.equal(admits(range, '2.0'), false);
      assert.equal(admits(range, '0.9'), false);
    }
  });

  it('">=2.0" admits 2.0 and everything above, open-ended', () => {
    const range = parseVersionRange('>=2.0');
    for (const yes of ['2.0', '2.1', '3.0', '100.0']) assert.equal(admits(range, yes), true, yes);
    for (const no of ['1.0', '1.99', '0.1']) assert.equal(admits(range, no), false, no);
  });

  it('">1.0" excludes 1.0 itself and admits later minors and majors', () => {
    const range = parseVersionRange('>1.0');
    assert.equal(admits(range, '1.0'), false);
    assert.equal(admits(range, '0.9'), false);
    assert.equal(admits(range, '1.1'), true);
    assert.equal(admits(range, '2.0'), true);
  });

  it('"<=2.0" admits 2.0 and below, not 2.1', () => {
    const range = parseVersionRange('<=2.0');
    for (const yes of ['0.1', '1.0', '1.9', '2.0']) assert.equal(admits(range, yes), true, yes);
    for (const no of ['2.1', '3.0']) assert.equal(admits(range, no), false, no);
  });

  it('"<=2.0" admits the patches of 2.0, as the exact "2.0" does', () => {
    assert.equal(admits('<=2.0', '2.0.1'), true);
    assert.equal(admits('>1.0', '1.0.1'), false);
  });

  it('combined comparators intersect (the tightest bound wins)', () => {
    const range = parseVersionRange('>=1.0 >=1.5 <3.0 <2.5');
    assert.equal(admits(range, '1.4'), false);
    assert.equal(admits(range, '1.5'), true);
    assert.equal(admits(range, '2.4'), true);
    assert.equal(admits(range, '2.5'), false);
  });

  it('keeps the text as declared', () => {
    assert.equal(parseVersionRange('>=1.0, <2.0').text, '>=1.0, <2.0');
    assert.equal(parseVersionRange('>=2.0').text, '>=2.0');
  });

  it('rejects SemVer caret/tilde, garbage and empty ranges with invalid_request naming the field', () => {
    for (const bad of [
      '^1.0',
      '~1.0',
      '~>1.0',
      'abc',
      '',
      '   ',
      '>=',
      '<',
      '>=abc',
      '>=1.0 <abc',
      '1.0 || 2.0',
      '!=1.0',
      '2.x',
      '1.*',
      '>=v1.0',
      '>=1.0 *',
    ]) {
      assertOjsError(() => parseVersionRange(bad), 'invalid_request', 'versions');
    }
    for (const bad of [true, {}, ['>=1.0'], -1]) {
      assertOjsError(() => parseVersionRange(bad), 'invalid_request', 'versions');
    }
    assertOjsError(
      () => parseVersionRange('^2.0', 'handlers[3].versions'),
      'invalid_request',
      'handlers[3].versions',
    );
  });

  it('rejects ranges that admit no version (">=3.0 <1.0", ">=2.0 <2.0", "1.0 2.0")', () => {
    for (const empty of ['>=3.0 <1.0', '>=2.0 <2.0', '>2.0 <=2.0', '1.0 2.0', '>=2.0, <1.5']) {
      const error = assertOjsError(() => parseVersionRange(empty), 'invalid_request', 'versions');
      assert.match(error.message, /admits no version/);
    }
  });

  it('admits unversioned jobs under every range (VER-006)', () => {
    for (const text of [
      '*',
      '2.0',
      '>=1.0 <3.0',
      '>=1.0, <2.0',
      '>=2.0',
      '>1.0',
      '<=2.0',
      '<1.0',
    ]) {
      assert.equal(admits(text, undefined), true, `${text} admits unversioned`);
    }
  });

  it('admits a different major only when the range spans it (seed 004 §7.2)', () => {
    assert.equal(admits('1.0', '2.0'), false);
    assert.equal(admits('>=1.0 <2.0', '2.0'), false);
    assert.equal(admits('>=1.0, <2.0', '2.3'), false);
    assert.equal(admits('>=2.0 <3.0', '1.9'), false);
    assert.equal(admits('>=2.0 <3.0', '3.0'), false);
    assert.equal(admits('>=1.0 <3.0', '2.3'), true);
    assert.equal(admits('>=1.0', '7.0'), true);
    // Within a major, a worker for N.x takes N.y for y >= x (seed 004 §7.1).
    assert.equal(admits('>=1.2 <2.0', '1.7'), true);
    assert.equal(admits('>=1.2 <2.0', '1.1'), false);
  });
});

describe('splitTypeVersion (VER-002)', () => {
  it('splits a version-shaped suffix after @', () => {
    assert.deepEqual(splitTypeVersion('invoice.generate@2.0'), {
      type: 'invoice.generate',
      version: '2.0',
    });
    assert.deepEqual(splitTypeVersion('email.send@3'), { type: 'email.send', version: '3' });
    assert.deepEqual(splitTypeVersion('a.b@1.2.3'), { type: 'a.b', version: '1.2.3' });
  });

  it('leaves types without a version-shaped suffix whole', () => {
    assert.deepEqual(splitTypeVersion('invoice.generate'), { type: 'invoice.generate' });
    for (const whole of ['a@', '@2.0', 'a@v2', 'a@latest', 'a@2.x', 'a@^1.0']) {
      assert.deepEqual(splitTypeVersion(whole), { type: whole }, whole);
    }
  });

  it('splits at the last @ (the rest stays part of the type and fails its pattern)', () => {
    assert.deepEqual(splitTypeVersion('a@1.0@2.0'), { type: 'a@1.0', version: '2.0' });
  });
});

describe('parseHandlers (VER-003)', () => {
  it('absent or null means no declaration', () => {
    assert.equal(parseHandlers(undefined), undefined);
    assert.equal(parseHandlers(null), undefined);
  });

  it('parses {type, versions} entries; a missing versions or a bare type string means "*"', () => {
    const handlers = parseHandlers([
      { type: 'invoice.generate', versions: '>=1.0 <3.0' },
      { type: 'email.send', versions: '*' },
      { type: 'report.generate', versions: '2.0' },
      { type: 'audit.log' },
      'cleanup.run',
    ]);
    assert.ok(handlers !== undefined);
    assert.deepEqual(
      handlers.map((h) => [h.type, h.range.text, h.range.any]),
      [
        ['invoice.generate', '>=1.0 <3.0', false],
        ['email.send', '*', true],
        ['report.generate', '2.0', false],
        ['audit.log', '*', true],
        ['cleanup.run', '*', true],
      ],
    );
    assert.deepEqual(parseHandlers([]), []);
  });

  it('rejects a non-array, entries without a string type and malformed ranges, naming the entry', () => {
    assertOjsError(() => parseHandlers({ type: 'a' }), 'invalid_request', 'handlers');
    assertOjsError(() => parseHandlers('a'), 'invalid_request', 'handlers');
    assertOjsError(() => parseHandlers([{ versions: '*' }]), 'invalid_request', 'handlers[0]');
    assertOjsError(
      () => parseHandlers([{ type: 'a' }, { type: 7, versions: '*' }]),
      'invalid_request',
      'handlers[1]',
    );
    assertOjsError(() => parseHandlers([null]), 'invalid_request', 'handlers[0]');
    assertOjsError(() => parseHandlers([42]), 'invalid_request', 'handlers[0]');
    assertOjsError(
      () =>
        parseHandlers([
          { type: 'a', versions: '*' },
          { type: 'b', versions: '^1.0' },
        ]),
      'invalid_request',
      'handlers[1].versions',
    );
    assertOjsError(
      () => parseHandlers([{ type: 'a', versions: '>=3.0 <1.0' }]),
      'invalid_request',
      'handlers[0].versions',
    );
    assertOjsError(
      () => parseHandlers([{ type: 'a', versions: '~1.0' }], 'worker.handlers'),
      'invalid_request',
      'worker.handlers[0].versions',
    );
  });
});

describe('handlersAdmit (routing predicate, VER-004/005/006)', () => {
  const handlers = parseHandlers([
    { type: 'invoice.generate', versions: '>=1.0 <2.0' },
    { type: 'email.send', versions: '*' },
  ])!;

  it('no declaration admits every job', () => {
    assert.equal(handlersAdmit(undefined, { type: 'anything' }), true);
    assert.equal(handlersAdmit(undefined, { type: 'anything', version_num: v('9.0') }), true);
  });

  it('admits a versioned job only when a handler of its type admits the version', () => {
    assert.equal(
      handlersAdmit(handlers, { type: 'invoice.generate', version_num: v('1.0') }),
      true,
    );
    assert.equal(
      handlersAdmit(handlers, { type: 'invoice.generate', version_num: v('1.4') }),
      true,
    );
    assert.equal(
      handlersAdmit(handlers, { type: 'invoice.generate', version_num: v('2.0') }),
      false,
    );
    assert.equal(
      handlersAdmit(handlers, { type: 'invoice.generate', version_num: v('0.9') }),
      false,
    );
    assert.equal(handlersAdmit(handlers, { type: 'email.send', version_num: v('7.0') }), true);
  });

  it('admits unversioned jobs of a declared type, never jobs of an undeclared type', () => {
    assert.equal(handlersAdmit(handlers, { type: 'invoice.generate' }), true);
    assert.equal(handlersAdmit(handlers, { type: 'email.send' }), true);
    assert.equal(handlersAdmit(handlers, { type: 'report.generate' }), false);
    assert.equal(
      handlersAdmit(handlers, { type: 'report.generate', version_num: v('1.0') }),
      false,
    );
    assert.equal(handlersAdmit([], { type: 'invoice.generate' }), false);
  });

  it('any handler of the type may admit (two ranges for one type are a union)', () => {
    const two = parseHandlers([
      { type: 'invoice.generate', versions: '1.0' },
      { type: 'invoice.generate', versions: '>=3.0' },
    ])!;
    assert.equal(handlersAdmit(two, { type: 'invoice.generate', version_num: v('1.0') }), true);
    assert.equal(handlersAdmit(two, { type: 'invoice.generate', version_num: v('2.0') }), false);
    assert.equal(handlersAdmit(two, { type: 'invoice.generate', version_num: v('3.5') }), true);
  });
});
