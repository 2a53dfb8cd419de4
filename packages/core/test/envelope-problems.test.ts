import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import {
  checkJobDocument,
  checkRequestJson,
  OjsError,
  Problems,
  parseEnqueueRequest,
  readEnqueueRequest,
} from '../src/index.ts';

const defaults = { visibilityTimeoutMs: 30_000 };
const BAD = {
  type: 'Bad Type',
  args: { to: 'x' },
  options: { queue: 'Q', priority: 500, tags: ['a', 1], retry: { max_attempts: -1, jitter: 'y' } },
};

function collected(body: unknown) {
  const problems = new Problems(true);
  readEnqueueRequest(body, 0, defaults, problems);
  return problems.found.map((p) => `${p.path} ${p.rule}`);
}

describe('the envelope parser in collecting mode', () => {
  it('reports every problem the throwing mode stops at the first of', () => {
    assert.deepEqual(collected(BAD), [
      '$.type pattern',
      '$.args type',
      '$.options.queue pattern',
      '$.options.priority maximum',
      '$.options.retry.max_attempts minimum',
      '$.options.retry.jitter type',
      '$.options.tags[1] type',
    ]);
    assert.throws(
      () => parseEnqueueRequest(BAD, 0, defaults),
      (e: unknown) => e instanceof OjsError && /type 'Bad Type' is invalid/.test(e.message),
    );
  });
  it('throws in throwing mode exactly what parseEnqueueRequest throws', () => {
    for (const body of [
      { type: 'a', args: [], options: { unique: { keys: ['colour'] } } },
      { type: 'a', args: [], retry: { initial_interval: 'PT10S', max_interval: 'PT5S' } },
      { type: 'a', args: [{ x: 1 }], unique: { args_keys: ['y', 'z'] } },
      { type: 'a', args: [], options: { rate_limit: { rate: 0 } } },
    ]) {
      const thrown = (f: () => unknown) => {
        try {
          f();
        } catch (e) {
          return e as OjsError;
        }
        assert.fail('no error');
      };
      const a = thrown(() => parseEnqueueRequest(body, 0, defaults));
      const b = thrown(() => readEnqueueRequest(body, 0, defaults, new Problems(false)));
      assert.deepEqual([a.code, a.message, a.details], [b.code, b.message, b.details]);
      assert.equal(collected(body).length >= 1, true, JSON.stringify(body));
    }
  });
  it('relates the retry intervals only once each is valid alone', () => {
    assert.deepEqual(
      collected({
        type: 'a',
        args: [],
        retry: { initial_interval: 'PT10M', max_interval: 'PT1H' },
      }),
      [],
    );
    assert.deepEqual(
      collected({
        type: 'a',
        args: [],
        retry: { initial_interval: 'PT10S', max_interval: 'PT5S' },
      }),
      ['$.retry.max_interval minimum'],
    );
  });
  it('advises the envelope rules the server does not enforce; the server accepts them', () => {
    const doc = { specversion: '2.0', type: 'a', args: [{ __class__: 'X' }], state: 'done' };
    const problems = new Problems(true);
    checkJobDocument(doc, 'envelope', problems);
    assert.deepEqual(
      problems.found.map((p) => `${p.path} ${p.rule}`),
      [
        '$.specversion enum',
        '$.id required',
        '$.queue required',
        '$.args[0].__class__ no_type_annotation',
        '$.state enum',
      ],
    );
    assert.equal(parseEnqueueRequest(doc, 0, defaults).type, 'a');
  });
  it('a priority named like an Object property is refused, not taken from the prototype', () => {
    assert.throws(() =>
      parseEnqueueRequest({ type: 'a', args: [], priority: 'constructor' }, 0, defaults),
    );
    assert.throws(() =>
      parseEnqueueRequest(
        { type: 'a', args: [], unique: { on_conflict: 'constructor' } },
        0,
        defaults,
      ),
    );
  });
});

describe('checkRequestJson in collecting mode', () => {
  it('reports every unstorable string, key and depth breach; throwing mode is unchanged', () => {
    let deep: unknown = 'x';
    for (let i = 0; i < 70; i++) deep = [deep];
    const body = { type: 'a', args: ['\u0000', deep], meta: { '\ud800': 1 } };
    const problems = new Problems(true);
    checkRequestJson(body, problems);
    assert.deepEqual(
      problems.found.map((p) => `${p.path} ${p.rule}`),
      [
        '$.args[0] format.text',
        `$.args[1]${'[0]'.repeat(62)} max_depth`,
        '$.meta["\\ud800"] format.text',
      ],
    );
    assert.throws(
      () => checkRequestJson(body),
      /The request body at \$\.args\[0\] contains the NUL/,
    );
  });
});

describe('advised rules', () => {
  it('a unique dimension listed twice is advised (schema uniqueItems), and accepted by the server', () => {
    const body = { type: 'a', args: [], unique: { keys: ['type', 'type'] } };
    assert.deepEqual(collected(body), ['$.unique.keys[1] unique_items']);
    assert.deepEqual(parseEnqueueRequest(body, 0, defaults).unique?.keys, ['type', 'type']);
  });
});
