/**
 * Issue #11 in the in-process binding: the request limits of the HTTP
 * binding (core limits.ts) hold when the SDK calls the engine directly, so
 * a NUL, a lone surrogate or deep nesting gets the same 400 on every store
 * and never reaches one.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { OjsError } from '@ojs/sdk';
import { startTestServer, type TestServer, testStores } from './helpers.ts';

for (const store of await testStores()) {
  describe(`in-process request limits (${store})`, () => {
    let server: TestServer;
    before(async () => {
      server = await startTestServer({ store });
    });
    after(async () => {
      await server.close();
    });

    const deep = (depth: number): unknown => {
      let value: unknown = 1;
      for (let i = 0; i < depth; i++) value = [value];
      return value;
    };

    for (const [label, args] of [
      ['a NUL', ['a\u0000b']],
      ['a lone surrogate', ['\ud800']],
      ['10,000 levels of nesting', [deep(10_000)]],
    ] as const) {
      it(`${label} in args -> invalid_payload, nothing stored`, async () => {
        const client = server.client('in-process');
        await assert.rejects(
          client.enqueue('limits.test', [...args] as unknown[], { queue: 'limits' }),
          (error: unknown) => error instanceof OjsError && error.code === 'invalid_payload',
        );
        assert.equal((await client.queueStats('limits')).available ?? 0, 0);
      });
    }
  });
}
