import assert from 'node:assert/strict';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import { parseValidateArgs, type ValidateIo, validateMain } from '../src/validate-cli.ts';

const UUID7 = '0190abcd-ef01-7abc-8def-0123456789ab';

function io(stdin?: string): ValidateIo & { stdout: string[]; stderr: string[] } {
  const stdout: string[] = [];
  const stderr: string[] = [];
  const result: ValidateIo & { stdout: string[]; stderr: string[] } = {
    stdout,
    stderr,
    out: (t) => stdout.push(t),
    err: (t) => stderr.push(t),
  };
  if (stdin !== undefined) result.readStdin = async () => stdin;
  return result;
}

describe('ojs validate', () => {
  let dir: string;
  const file = (name: string) => path.join(dir, name);
  before(async () => {
    dir = await mkdtemp(path.join(tmpdir(), 'ojs-validate-'));
    await writeFile(file('ok.json'), JSON.stringify({ type: 'test.echo', args: ['hello'] }));
    await writeFile(
      file('envelope.json'),
      JSON.stringify({ specversion: '1.0', id: UUID7, type: 'a.b', queue: 'default', args: [] }),
    );
    await writeFile(
      file('many.json'),
      JSON.stringify([
        { type: 'test.echo', args: [] },
        { type: 'Email.Send', args: {} },
        { type: 'x', args: [], options: { queue: 'Default' } },
      ]),
    );
    await writeFile(file('broken.json'), '{"type": "a", ');
    await writeFile(file('states.json'), JSON.stringify(['available', 'active', 'completed']));
    await writeFile(file('bad-states.json'), JSON.stringify(['available', 'completed', 'active']));
  });
  after(() => rm(dir, { recursive: true, force: true }));

  it('exit 0 for a valid document, with a one-line verdict', async () => {
    const out = io();
    assert.equal(await validateMain([file('ok.json')], out), 0);
    assert.deepEqual(out.stdout, [`${file('ok.json')}: valid enqueue request`]);
    const env = io();
    assert.equal(await validateMain([file('envelope.json'), '--envelope'], env), 0);
    assert.match(env.stdout[0]!, /valid job envelope/);
  });
  it('exit 1 for invalid documents, listing every problem by path and rule', async () => {
    const out = io();
    assert.equal(await validateMain([file('many.json')], out), 1);
    assert.deepEqual(out.stdout, [
      `${file('many.json')}: 3 problems in 2 of 3 documents`,
      '[1] invalid enqueue request:',
      '  $[1].type  pattern  type "Email.Send" does not match ^[a-z][a-z0-9_-]*(\\.[a-z][a-z0-9_-]*)*$  [L0-ENV-003]',
      '  $[1].args  type  must be a JSON array, got object {}  [L0-ENV-005]',
      '[2] invalid enqueue request:',
      '  $[2].options.queue  pattern  queue "Default" does not match ^[a-z0-9][a-z0-9.-]*$  [L0-ENV-004]',
    ]);
  });
  it('--kind envelope requires the five attributes', async () => {
    const out = io();
    assert.equal(await validateMain([file('ok.json'), '--kind', 'envelope'], out), 1);
    assert.deepEqual(
      out.stdout.slice(1).map((l) => l.trim().split('  ').slice(0, 2).join(' ')),
      ['$.specversion required', '$.id required', '$.queue required'],
    );
  });
  it('reads standard input for "-" or no FILE', async () => {
    const out = io('{"type": "a", "args": []}');
    assert.equal(await validateMain(['-'], out), 0);
    assert.deepEqual(out.stdout, ['stdin: valid enqueue request']);
    const bad = io('[{"type": "a"}]');
    assert.equal(await validateMain([], bad), 1);
    assert.match(bad.stdout.join('\n'), /\$\[0\]\.args {2}required/);
  });
  it('a JSON syntax error is invalid (exit 1)', async () => {
    const out = io();
    assert.equal(await validateMain([file('broken.json')], out), 1);
    assert.match(out.stdout.join('\n'), /invalid JSON\n {2}\$ {2}json\.syntax/);
  });
  it('--format json gives a machine-readable result', async () => {
    const out = io();
    assert.equal(await validateMain([file('many.json'), '--format=json'], out), 1);
    const result = JSON.parse(out.stdout.join('\n'));
    assert.equal(result.valid, false);
    assert.equal(result.documents.length, 3);
    assert.deepEqual(result.documents[1].issues[0], {
      path: '$[1].type',
      rule: 'pattern',
      message: 'type "Email.Send" does not match ^[a-z][a-z0-9_-]*(\\.[a-z][a-z0-9_-]*)*$',
      ref: 'L0-ENV-003',
    });
  });
  it('--transitions validates a state sequence', async () => {
    const ok = io();
    assert.equal(await validateMain([file('states.json'), '--transitions'], ok), 0);
    assert.match(ok.stdout[0]!, /valid state sequence \(core transition table\)/);
    const bad = io();
    assert.equal(await validateMain([file('bad-states.json'), '--transitions'], bad), 1);
    assert.deepEqual(bad.stdout.slice(1), [
      '  $[1]  transition  available -> completed is not allowed: from available only active, cancelled, discarded are allowed  [L0-LC-002]',
      '  $[2]  transition  completed -> active is not allowed: completed is terminal  [L0-LC-002]',
    ]);
    const strict = io('["available", "active", "available"]');
    assert.equal(await validateMain(['--transitions', '--strict'], strict), 1);
  });
  it('--quiet prints nothing', async () => {
    const out = io();
    assert.equal(await validateMain([file('many.json'), '--quiet'], out), 1);
    assert.deepEqual(out.stdout, []);
  });
  it('exit 2 for usage errors and unreadable files', async () => {
    for (const argv of [
      ['--bogus'],
      ['a.json', 'b.json'],
      ['--kind', 'thing'],
      ['--format', 'xml'],
      ['--strict'],
      [path.join(dir, 'missing.json')],
    ]) {
      const out = io();
      assert.equal(await validateMain(argv, out), 2, argv.join(' '));
      assert.match(out.stderr.join('\n'), /^error: /);
    }
    const help = io();
    assert.equal(await validateMain(['--help'], help), 0);
    assert.match(help.stdout[0]!, /^Usage: ojs validate/);
  });
  it('parses options', () => {
    assert.deepEqual(parseValidateArgs(['x.json', '--request', '--format', 'json']), {
      file: 'x.json',
      kind: 'request',
      transitions: false,
      strict: false,
      format: 'json',
      quiet: false,
      help: false,
    });
  });
});
