import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { goFloat, goValue, templateText } from '../src/gofmt.ts';
import { resolveDeep, resolveTemplates } from '../src/templates.ts';
import type { JsonObject } from '../src/types.ts';

const bodies = new Map<string, JsonObject>([
  [
    'step-1',
    {
      job: {
        id: 'abc',
        attempt: 3,
        ratio: 0.25,
        big: 1e21,
        ok: true,
        tags: ['a', 'b'],
        meta: { k: 'v' },
        none: null,
      },
      jobs: [{ id: 'first' }],
    },
  ],
]);

describe('resolveTemplates', () => {
  it('substitutes strings raw, in paths and inside JSON text', () => {
    assert.equal(
      resolveTemplates('/ojs/v1/jobs/{{steps.step-1.response.body.job.id}}', bodies),
      '/ojs/v1/jobs/abc',
    );
    assert.equal(
      resolveTemplates('{"id":"{{steps.step-1.response.body.job.id}}"}', bodies),
      '{"id":"abc"}',
    );
    assert.equal(resolveTemplates('{{steps.step-1.response.body.jobs[0].id}}', bodies), 'first');
  });
  it('converts numbers, booleans, arrays and objects', () => {
    assert.equal(resolveTemplates('{{steps.step-1.response.body.job.attempt}}', bodies), '3');
    assert.equal(resolveTemplates('{{steps.step-1.response.body.job.ratio}}', bodies), '0.25');
    assert.equal(resolveTemplates('{{steps.step-1.response.body.job.ok}}', bodies), 'true');
    assert.equal(resolveTemplates('{{steps.step-1.response.body.job.tags}}', bodies), '["a","b"]');
    assert.equal(resolveTemplates('{{steps.step-1.response.body.job.meta}}', bodies), '{"k":"v"}');
  });
  it('leaves unresolvable templates literally in place', () => {
    for (const text of [
      '{{steps.step-9.response.body.job.id}}', // unknown step
      '{{steps.step-1.response.body.job.missing}}', // missing field
      '{{steps.step-1.response.body.job.none}}', // null field
      '{{steps.step-1.response.body.jobs[5].id}}', // resolution error
      '{{steps.step-1.response.body}}', // no field: never matches the syntax
      '{{job_id}}',
      // biome-ignore lint/suspicious/noTemplateCurlyInString: a literal placeholder from the suites
      '${job_id}',
    ]) {
      assert.equal(resolveTemplates(`/x/${text}`, bodies), `/x/${text}`);
    }
  });
  it('resolves several templates in one string', () => {
    const text = '{{steps.step-1.response.body.job.id}}-{{steps.step-1.response.body.job.attempt}}';
    assert.equal(resolveTemplates(text, bodies), 'abc-3');
  });
  it('resolveDeep applies to every string value of a matcher', () => {
    assert.deepEqual(
      resolveDeep(
        {
          $in: ['{{steps.step-1.response.body.job.id}}', 2],
          x: ['{{steps.step-1.response.body.job.attempt}}'],
        },
        bodies,
      ),
      { $in: ['abc', 2], x: ['3'] },
    );
  });
});

describe('Go value formatting', () => {
  it('goFloat mimics %v', () => {
    assert.equal(goFloat(1), '1');
    assert.equal(goFloat(0.25), '0.25');
    assert.equal(goFloat(123456), '123456');
    assert.equal(goFloat(1000000), '1e+06');
    assert.equal(goFloat(123456789), '1.23456789e+08');
    assert.equal(goFloat(0.00001), '1e-05');
    assert.equal(goFloat(0.0001), '0.0001');
  });
  it('templateText prints integral numbers without exponent', () => {
    assert.equal(templateText(1000000), '1000000');
    assert.equal(templateText(1.5e-7), '1.5e-07');
  });
  it('goValue prints containers like Go', () => {
    assert.equal(goValue(null), '<nil>');
    assert.equal(goValue([1, 'a', true]), '[1 a true]');
    assert.equal(goValue({ b: 1, a: 'x' }), 'map[a:x b:1]');
  });
});
