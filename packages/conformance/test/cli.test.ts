import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { parseCliArgs } from '../src/cli.ts';

describe('parseCliArgs', () => {
  it('has the documented defaults', () => {
    const options = parseCliArgs([], {});
    assert.equal(options.url, 'http://localhost:8080');
    assert.equal(options.format, 'table');
    assert.equal(options.timeoutMs, 30_000);
    assert.deepEqual(options.suites, []);
    assert.deepEqual(options.filter, {});
    assert.equal(parseCliArgs([], { OJS_TEST_URL: 'http://env:1' }).url, 'http://env:1');
    assert.equal(
      parseCliArgs(['--url', 'http://flag:2'], { OJS_TEST_URL: 'http://env:1' }).url,
      'http://flag:2',
    );
  });
  it('accepts repeated and multi-valued --suites, = forms and Go-style spellings', () => {
    const options = parseCliArgs(
      [
        '--suites',
        'a',
        'b',
        '--suites=c',
        '-suites',
        'd',
        '-reset-url',
        'http://x/reset',
        '-output',
        'json',
        '-report-file',
        'r.json',
      ],
      {},
    );
    assert.deepEqual(options.suites, ['a', 'b', 'c', 'd']);
    assert.equal(options.resetUrl, 'http://x/reset');
    assert.equal(options.format, 'json');
    assert.equal(options.reportFile, 'r.json');
  });
  it('parses filters and the timeout', () => {
    const options = parseCliArgs(
      ['--level', 'ext', '--test', 'L0-OPS-001', '--category', 'retry', '--timeout', '1.5'],
      {},
    );
    assert.deepEqual(options.filter, { level: 99, testId: 'L0-OPS-001', category: 'retry' });
    assert.equal(options.timeoutMs, 1500);
    assert.equal(parseCliArgs(['--level', '3'], {}).filter.level, 3);
  });
  it('parses the report, badge, manifest and gate options', () => {
    const options = parseCliArgs(
      [
        '--format',
        'junit',
        '--junit',
        'j.xml',
        '--badge',
        'b.svg',
        '--max-level',
        '2',
        '--manifest-url',
        'http://m/manifest',
        '--gate',
        'declared',
      ],
      {},
    );
    assert.equal(options.format, 'junit');
    assert.equal(options.junitFile, 'j.xml');
    assert.equal(options.badgeFile, 'b.svg');
    assert.equal(options.filter.maxLevel, 2);
    assert.equal(options.manifestUrl, 'http://m/manifest');
    assert.equal(options.gate, 'declared');
    assert.equal(options.manifest, true);
    assert.equal(parseCliArgs(['--no-manifest'], {}).manifest, false);
    assert.equal(parseCliArgs([], {}).gate, 'all');
  });
  it('rejects invalid input', () => {
    for (const argv of [
      ['--max-level', '5'],
      ['--gate', 'some'],
      ['--gate', 'declared', '--no-manifest'],
      ['--manifest-url', 'nope'],
      ['--level', 'gold'],
      ['--timeout', '0'],
      ['--format', 'xml'],
      ['--url', 'not a url'],
      ['--nope'],
      ['stray'],
      ['--test'],
    ]) {
      assert.throws(() => parseCliArgs(argv, {}), Error, argv.join(' '));
    }
  });
});
