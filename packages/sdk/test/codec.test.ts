/**
 * Codecs (encryption extension): the blob layout of the spec checked by
 * hand against node:crypto and node:zlib (a blob built to the letter
 * decodes; ours parse by the layout), key rotation by key id, and a round
 * trip through our server over HTTP, in-process and gRPC: the server keeps
 * the encoded args and the flat codec keys (plus their nested mirror in
 * output), the worker decodes before the handler runs, unique keys come
 * from the plaintext, and a job whose key is unknown fails without retry.
 */
import assert from 'node:assert/strict';
import { createCipheriv, createDecipheriv } from 'node:crypto';
import { after, before, describe, it } from 'node:test';
import { gunzipSync, zstdDecompressSync } from 'node:zlib';
import {
  AesGcmCodec,
  CODEC_META,
  CodecChain,
  CodecError,
  DuplicateJobError,
  fromBase64,
  GzipCodec,
  generateKey,
  type Job,
  type JobEnvelope,
  OjsClient,
  toBase64,
  ZstdCodec,
} from '@ojs/sdk';
import { type Mode, startTestServer, type TestServer, waitFor } from './helpers.ts';

const KEY = Buffer.from(Array.from({ length: 32 }, (_, i) => i));
const KEY2 = Buffer.alloc(32, 7);
const NONCE = Buffer.from('000102030405060708090a0b', 'hex');

const envelope = (args: unknown[], extra: Pick<JobEnvelope, 'unique'> = {}): JobEnvelope => ({
  specversion: '1.0',
  id: '019a0000-0000-7000-8000-000000000001',
  type: 'secret.job',
  queue: 'default',
  args,
  meta: { trace: 't' },
  ...extra,
});

/** The spec's blob, by hand: 0x01 | nonce | ciphertext | tag. */
function officialBlob(plaintext: Buffer, key: Buffer, nonce: Buffer): Buffer {
  const cipher = createCipheriv('aes-256-gcm', key, nonce);
  const ct = Buffer.concat([cipher.update(plaintext), cipher.final()]);
  return Buffer.concat([Buffer.from([0x01]), nonce, ct, cipher.getAuthTag()]);
}

/** Parses a blob by the spec's layout and decrypts it with node:crypto. */
function openBlob(blob: Buffer, key: Buffer): Buffer {
  assert.equal(blob[0], 0x01);
  const nonce = blob.subarray(1, 13);
  const tag = blob.subarray(blob.length - 16);
  const decipher = createDecipheriv('aes-256-gcm', key, nonce);
  decipher.setAuthTag(tag);
  return Buffer.concat([decipher.update(blob.subarray(13, blob.length - 16)), decipher.final()]);
}

describe('codec formats', () => {
  const aes = new AesGcmCodec({ keys: { k1: KEY }, currentKeyId: 'k1' });

  it('decodes a blob built to the spec with a known key and nonce', async () => {
    const args = [{ to: 'ada@example.com', amount: 42 }, 'é'];
    const blob = officialBlob(Buffer.from(JSON.stringify(args)), KEY, NONCE);
    const chain = new CodecChain([aes]);
    const job = {
      args: [{ ojs_encoded: true, encoding: 'binary/encrypted', data: blob.toString('base64') }],
      meta: {
        [CODEC_META.encodings]: ['binary/encrypted'],
        [CODEC_META.keyId]: 'k1',
        [CODEC_META.nonce]: NONCE.toString('base64'),
      },
    };
    assert.deepEqual(await chain.decodeArgs(job), args);
    // The suites' form: bare base64 args with meta.ojs_encoded.
    assert.deepEqual(
      await chain.decodeArgs({
        args: [blob.toString('base64')],
        meta: { ...job.meta, ojs_encoded: true },
      }),
      args,
    );
  });

  it('encodes gzip then AES-256-GCM; undone by hand in reverse: decrypt, then gunzip', async () => {
    const args = ['x'.repeat(500), { n: 1 }];
    const chain = new CodecChain([new GzipCodec(), aes]);
    const out = await chain.encodeEnvelope(envelope(args));
    assert.equal(out.args.length, 1);
    const [encoded] = out.args as [{ ojs_encoded: boolean; encoding: string; data: string }];
    assert.equal(encoded.ojs_encoded, true);
    assert.equal(encoded.encoding, 'binary/encrypted+gzip');
    assert.deepEqual(out.meta?.[CODEC_META.encodings], ['gzip/plain', 'binary/encrypted']);
    assert.equal(out.meta?.[CODEC_META.keyId], 'k1');
    assert.equal(out.meta?.trace, 't', 'the other meta keys stay');
    const blob = Buffer.from(encoded.data, 'base64');
    assert.deepEqual(blob.subarray(1, 13).toString('base64'), out.meta?.[CODEC_META.nonce]);
    const plain = gunzipSync(openBlob(blob, KEY));
    assert.deepEqual(JSON.parse(plain.toString('utf8')), args);
    assert.ok(blob.length < 200, 'compressed before encryption');
    assert.deepEqual(await chain.decodeArgs(out as { args: unknown[] }), args);
  });

  it('zstd then AES by hand; a compression that would grow the payload stands aside', async () => {
    const args = ['y'.repeat(400)];
    const zstdChain = new CodecChain([new ZstdCodec(), aes]);
    const out = await zstdChain.encodeEnvelope(envelope(args));
    assert.deepEqual(out.meta?.[CODEC_META.encodings], ['zstd/plain', 'binary/encrypted']);
    const blob = Buffer.from((out.args[0] as { data: string }).data, 'base64');
    assert.deepEqual(JSON.parse(zstdDecompressSync(openBlob(blob, KEY)).toString('utf8')), args);
    assert.deepEqual(await zstdChain.decodeArgs(out as { args: unknown[] }), args);

    const gzipChain = new CodecChain([new GzipCodec(), aes]);
    const small = await gzipChain.encodeEnvelope(envelope([1]));
    assert.deepEqual(small.meta?.[CODEC_META.encodings], ['binary/encrypted']);
    assert.equal((small.args[0] as { encoding: string }).encoding, 'binary/encrypted');
    assert.deepEqual(await gzipChain.decodeArgs(small as { args: unknown[] }), [1]);
    const onlyGzip = await new CodecChain([new GzipCodec()]).encodeEnvelope(envelope([1]));
    assert.deepEqual(onlyGzip.args, [1], 'nothing applied: sent as it is');
    assert.equal(onlyGzip.meta?.[CODEC_META.encodings], undefined);
  });

  it('a fresh random nonce per job; tampering and bad keys are CodecErrors', async () => {
    const chain = new CodecChain([aes]);
    const a = await chain.encodeEnvelope(envelope([1]));
    const b = await chain.encodeEnvelope(envelope([1]));
    assert.notEqual(a.meta?.[CODEC_META.nonce], b.meta?.[CODEC_META.nonce]);
    const blob = fromBase64((a.args[0] as { data: string }).data);
    blob[blob.length - 1]! ^= 1;
    const tampered = { args: [{ ojs_encoded: true, data: toBase64(blob) }], meta: a.meta };
    await assert.rejects(chain.decodeArgs(tampered), CodecError);
    assert.throws(
      () => new AesGcmCodec({ keys: { k: Buffer.alloc(16) }, currentKeyId: 'k' }),
      /32/,
    );
    assert.throws(() => new AesGcmCodec({ keys: { k: KEY }, currentKeyId: 'other' }), /keyring/);
    assert.equal(fromBase64(await generateKey()).length, 32);
  });

  it('rotation: new jobs use the current key, old jobs decode by their key id; an unknown id fails', async () => {
    const before = new CodecChain([new AesGcmCodec({ keys: { k1: KEY }, currentKeyId: 'k1' })]);
    const old = await before.encodeEnvelope(envelope(['old']));
    const rotated = new CodecChain([
      new AesGcmCodec({ keys: { k1: toBase64(KEY), k2: KEY2 }, currentKeyId: 'k2' }),
    ]);
    const fresh = await rotated.encodeEnvelope(envelope(['new']));
    assert.equal(fresh.meta?.[CODEC_META.keyId], 'k2');
    assert.deepEqual(await rotated.decodeArgs(old as { args: unknown[] }), ['old']);
    assert.deepEqual(await rotated.decodeArgs(fresh as { args: unknown[] }), ['new']);
    const onlyNew = new CodecChain([new AesGcmCodec({ keys: { k2: KEY2 }, currentKeyId: 'k2' })]);
    await assert.rejects(onlyNew.decodeArgs(old as { args: unknown[] }), (error: unknown) => {
      assert.ok(error instanceof CodecError);
      assert.equal(error.retryable, false);
      assert.match(error.message, /key 'k1'/);
      return true;
    });
    const gzipOnly = new CodecChain([new GzipCodec()]);
    await assert.rejects(gzipOnly.decodeArgs(old as { args: unknown[] }), /binary\/encrypted/);
  });

  it('unique over args is computed from the plaintext, not the ciphertext', async () => {
    const chain = new CodecChain([aes]);
    const a = await chain.encodeEnvelope(envelope([{ user: 1, at: 1 }], { unique: {} }));
    const b = await chain.encodeEnvelope(envelope([{ user: 1, at: 1 }], { unique: {} }));
    assert.deepEqual(a.unique, {
      keys: ['type', 'queue', 'version', 'meta'],
      meta_keys: [CODEC_META.uniqueArgs],
    });
    assert.equal(a.meta?.[CODEC_META.uniqueArgs], b.meta?.[CODEC_META.uniqueArgs]);
    const c = await chain.encodeEnvelope(
      envelope([{ user: 1, at: 2 }], { unique: { keys: ['type', 'args'], args_keys: ['user'] } }),
    );
    const d = await chain.encodeEnvelope(
      envelope([{ user: 1, at: 3 }], { unique: { keys: ['type', 'args'], args_keys: ['user'] } }),
    );
    assert.equal(c.meta?.[CODEC_META.uniqueArgs], d.meta?.[CODEC_META.uniqueArgs]);
    assert.notEqual(c.meta?.[CODEC_META.uniqueArgs], a.meta?.[CODEC_META.uniqueArgs]);
  });
});

const MODES: Mode[] = ['http', 'in-process', 'grpc'];

describe('codecs through our server (sqlite)', () => {
  let server: TestServer;
  let n = 0;
  before(async () => {
    server = await startTestServer({ store: 'sqlite' });
  });
  after(() => server.close());

  const keyring = { k1: KEY, k2: KEY2 };
  const chainFor = (currentKeyId: string, keys: Record<string, Buffer> = keyring) =>
    new CodecChain([new GzipCodec(), new AesGcmCodec({ keys, currentKeyId })]);

  for (const mode of MODES) {
    it(`${mode}: encoded on the way in, kept by the server, decoded for the handler`, async () => {
      const queue = `codec-${mode}-${++n}`;
      const producer = new OjsClientWith(server, mode, chainFor('k1'));
      const args = [{ card: '4111 1111 1111 1111' }, 'secret'];
      const job = (await producer.client.enqueue('pay.charge', args, { queue }))!;
      assert.equal((job.args[0] as { ojs_encoded?: boolean }).ojs_encoded, true);
      // What the server stores and returns: the encoded args, the flat keys, the mirror.
      const stored = (await (await fetch(`${server.url}/ojs/v1/jobs/${job.id}`)).json()) as {
        job: Job;
      };
      assert.deepEqual(stored.job.args, job.args);
      assert.ok(!JSON.stringify(stored.job).includes('4111'), 'no plaintext reached the server');
      const meta = stored.job.meta as Record<string, unknown>;
      assert.equal(meta[CODEC_META.keyId], 'k1');
      assert.deepEqual((meta.ojs as { codec: { key_id: string } }).codec.key_id, 'k1');
      // The same output over this mode's transport (in-process: engine.wire; gRPC: the Struct).
      const read = await producer.client.getJob(job.id);
      assert.deepEqual(read.meta, meta);

      const seen: unknown[] = [];
      const worker = server.worker(mode, { queues: [queue], codec: chainFor('k2') });
      worker.register('pay.charge', async (ctx) => {
        seen.push(ctx.args, ctx.job.args);
      });
      await worker.start();
      try {
        const done = await waitFor(async () => {
          const j = await producer.client.getJob(job.id);
          return j.state === 'completed' ? j : undefined;
        });
        assert.deepEqual(seen, [args, args]);
        assert.deepEqual(done.args, job.args, 'completion keeps the encoded args');
      } finally {
        await worker.stop();
      }
    });
  }

  it('a worker without the key: the job fails for good with codec_error', async () => {
    const queue = `codec-unknown-${++n}`;
    const producer = new OjsClientWith(server, 'in-process', chainFor('k1'));
    const job = (await producer.client.enqueue('pay.charge', [1], {
      queue,
      retry: { maxAttempts: 5 },
    }))!;
    let ran = false;
    const worker = server.worker('in-process', {
      queues: [queue],
      codec: chainFor('k2', { k2: KEY2 }),
    });
    worker.register('pay.charge', async () => {
      ran = true;
    });
    await worker.start();
    try {
      const failed = await waitFor(async () => {
        const j = await producer.client.getJob(job.id);
        return j.state === 'discarded' ? j : undefined;
      });
      assert.equal(ran, false, 'the handler never ran');
      assert.equal(failed.attempt, 1, 'not retried');
      assert.match(JSON.stringify(failed.errors), /key 'k1'/);
    } finally {
      await worker.stop();
    }
  });

  it('unique keys over args hold for encrypted jobs (plaintext digest)', async () => {
    const queue = `codec-unique-${++n}`;
    const { client } = new OjsClientWith(server, 'http', chainFor('k1'));
    const unique = { keys: ['type', 'args'] as ('type' | 'args')[], onConflict: 'reject' as const };
    await client.enqueue('pay.charge', [{ order: 7 }], { queue, unique });
    await assert.rejects(
      client.enqueue('pay.charge', [{ order: 7 }], { queue, unique }),
      DuplicateJobError,
    );
    assert.ok(await client.enqueue('pay.charge', [{ order: 8 }], { queue, unique }));
  });
});

/** A client of the test server over `mode` with a codec. */
class OjsClientWith {
  readonly client: OjsClient;
  constructor(server: TestServer, mode: Mode, codec: CodecChain) {
    this.client = new OjsClient({ url: server.url, transport: server.transport(mode), codec });
  }
}
