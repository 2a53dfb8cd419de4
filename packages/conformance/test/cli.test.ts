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
  it('rejects invalid input', () => {
    for (const argv of [
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
