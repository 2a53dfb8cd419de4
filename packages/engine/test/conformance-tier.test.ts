/**
 * The manifest's conformance tier (conformance §3.3): `full` only when the
 * server serves both bindings and declares every Full-tier extension.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { SqliteStore } from '@ojs/store-sqlite';
import { buildManifest, Engine } from '../src/index.ts';

describe('conformance tier', () => {
  let engine: Engine;
  before(async () => {
    const store = new SqliteStore({ path: ':memory:' });
    await store.init();
    engine = new Engine({ store });
  });
  after(() => engine.store.close());

  const names = (manifest: Record<string, unknown>) =>
    (manifest.extensions as { official: { name: string }[] }).official.map((e) => e.name);

  it('is full with HTTP and gRPC and the four Full-tier extensions', () => {
    const manifest = buildManifest(engine.capabilities(), { protocols: ['http', 'grpc'] });
    assert.equal(manifest.conformance_tier, 'full');
    for (const name of ['webhooks', 'multi-tenancy', 'encryption', 'fair-scheduling']) {
      assert.ok(names(manifest).includes(name), name);
    }
  });

  it('is runtime without gRPC (the Full tier needs both bindings)', () => {
    const manifest = buildManifest(engine.capabilities(), { protocols: ['http'] });
    assert.equal(manifest.conformance_tier, 'runtime');
  });

  it('is runtime on a front door that does not serve webhooks (gRPC alone)', () => {
    const manifest = buildManifest(engine.capabilities(), { protocols: ['grpc'] });
    assert.ok(!names(manifest).includes('webhooks'));
    assert.equal(manifest.conformance_tier, 'runtime');
  });
});
