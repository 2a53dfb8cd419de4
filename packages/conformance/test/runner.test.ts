import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { parseTestCase } from '../src/loader.ts';
import { runTests } from '../src/runner.ts';
import { type MockServer, startMockServer } from './mock-server.ts';

describe('runTests phases', () => {
  let server: MockServer;
  before(async () => {
    server = await startMockServer();
  });
  after(() => server.close());

  const health = (id: string, status: number) => ({
    id,
    action: 'GET',
    path: '/ojs/v1/health',
    assertions: { status },
  });

  it('a failing setup step marks the test errored and skips its steps; teardown still runs', async () => {
    const test = parseTestCase(
      {
        test_id: 'T-SETUP',
        level: 0,
        setup: { steps: [health('setup-1', 500), health('setup-2', 200)] },
        steps: [health('step-1', 200)],
        teardown: { steps: [health('teardown-1', 200)] },
      },
      'setup.json',
    );
    server.log.length = 0;
    const [result] = await runTests([test], { baseUrl: server.url, timeoutMs: 2000 });
    assert.equal(result!.status, 'error');
    assert.deepEqual(
      result!.steps.map((s) => `${s.phase}:${s.id}:${s.status}`),
      ['setup:setup-1:fail', 'teardown:teardown-1:pass'],
    );
    assert.equal(server.log.length, 2);
  });

  it('teardown failures are ignored and failing steps do not stop later steps', async () => {
    const test = parseTestCase(
      {
        test_id: 'T-TEARDOWN',
        level: 0,
        steps: [health('step-1', 201), health('step-2', 200)],
        teardown: { steps: [health('teardown-1', 500)] },
      },
      'teardown.json',
    );
    const passing = parseTestCase(
      {
        test_id: 'T-OK',
        level: 0,
        steps: [health('step-1', 200)],
        teardown: { steps: [health('t', 500)] },
      },
      'ok.json',
    );
    const seen: string[] = [];
    const results = await runTests([test, passing], {
      baseUrl: server.url,
      timeoutMs: 2000,
      onTestResult: (r) => seen.push(`${r.test_id}:${r.status}`),
    });
    assert.deepEqual(seen, ['T-TEARDOWN:fail', 'T-OK:pass']);
    assert.deepEqual(
      results[0]!.steps.map((s) => s.status),
      ['fail', 'pass', 'fail'],
    );
  });

  it('sends no reset request when no reset URL is configured, one per test otherwise', async () => {
    const test = parseTestCase({ test_id: 'T', level: 0, steps: [health('s', 200)] }, 't.json');
    const before = server.resets;
    await runTests([test, test], { baseUrl: server.url, timeoutMs: 2000 });
    assert.equal(server.resets, before);
    await runTests([test, test], {
      baseUrl: server.url,
      resetUrl: `${server.url}/admin/reset`,
      timeoutMs: 2000,
    });
    assert.equal(server.resets, before + 2);
  });

  it('a failing step on a closed port is reported, not thrown', async () => {
    const test = parseTestCase({ test_id: 'T', level: 0, steps: [health('s', 200)] }, 't.json');
    const [result] = await runTests([test], {
      baseUrl: 'http://127.0.0.1:1',
      resetUrl: 'http://127.0.0.1:1/reset',
      timeoutMs: 2000,
    });
    assert.equal(result!.status, 'fail');
    assert.match(result!.steps[0]!.failures[0]!.message, /GET request failed: .*ECONNREFUSED/);
  });
});
