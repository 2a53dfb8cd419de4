/**
 * TLS and mTLS on the gRPC binding (`--grpc-tls-cert/-key/-ca`), with a
 * certificate made for the test by openssl; and the refusal to serve gRPC
 * beyond loopback without TLS when it is asked for.
 */
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import * as grpc from '@grpc/grpc-js';
import { GrpcTransport } from '@ojs/sdk/grpc';
import { startServer } from '@ojs/server';
import { startLiveServer } from '../../server/test/stores.ts';
import { ojsClientConstructor } from '../src/proto.ts';
import { unary } from './helpers.ts';

const dir = mkdtempSync(join(tmpdir(), 'ojs-grpc-tls-'));
const cert = join(dir, 'cert.pem');
const key = join(dir, 'key.pem');
let opensslProblem: string | undefined;
try {
  execFileSync(
    'openssl',
    [
      'req',
      '-x509',
      '-newkey',
      'rsa:2048',
      '-nodes',
      '-days',
      '1',
      '-subj',
      '/CN=localhost',
      '-addext',
      'subjectAltName=IP:127.0.0.1,DNS:localhost',
      '-keyout',
      key,
      '-out',
      cert,
    ],
    { stdio: 'ignore' },
  );
} catch (error) {
  opensslProblem = `openssl could not make a certificate: ${(error as Error).message}`;
  if (process.env.CI === 'true') throw new Error(opensslProblem);
}

function client(address: string, credentials: grpc.ChannelCredentials): grpc.Client {
  const Client = ojsClientConstructor();
  return new Client(address, credentials);
}

describe('gRPC over TLS', { skip: opensslProblem }, () => {
  after(() => rmSync(dir, { recursive: true, force: true }));

  describe('server TLS', () => {
    let server: Awaited<ReturnType<typeof startLiveServer>>;
    before(async () => {
      server = await startLiveServer('sqlite', { grpcTlsCert: cert, grpcTlsKey: key });
    });
    after(async () => server?.close());

    test('a client that trusts the certificate is served; a plaintext one is not', async () => {
      const address = `127.0.0.1:${server.grpcPort}`;
      const secure = client(address, grpc.credentials.createSsl(readFileSync(cert)));
      const plain = client(address, grpc.credentials.createInsecure());
      try {
        assert.equal((await unary(secure, 'Health')).status, 'HEALTH_STATUS_OK');
        await assert.rejects(unary(plain, 'Health', {}, {}, 3000), (e: grpc.ServiceError) =>
          [grpc.status.UNAVAILABLE, grpc.status.DEADLINE_EXCEEDED].includes(e.code),
        );
      } finally {
        secure.close();
        plain.close();
      }
    });
  });

  describe('mutual TLS', () => {
    let server: Awaited<ReturnType<typeof startLiveServer>>;
    before(async () => {
      server = await startLiveServer('sqlite', {
        grpcTlsCert: cert,
        grpcTlsKey: key,
        grpcTlsCa: cert,
      });
    });
    after(async () => server?.close());

    test('a client certificate signed by the CA is required', async () => {
      const address = `127.0.0.1:${server.grpcPort}`;
      const withCert = client(
        address,
        grpc.credentials.createSsl(readFileSync(cert), readFileSync(key), readFileSync(cert)),
      );
      const without = client(address, grpc.credentials.createSsl(readFileSync(cert)));
      try {
        assert.equal((await unary(withCert, 'Health')).status, 'HEALTH_STATUS_OK');
        // The SDK's transport, with its tls option.
        const transport = new GrpcTransport({
          address,
          tls: { ca: readFileSync(cert), cert: readFileSync(cert), key: readFileSync(key) },
        });
        assert.equal((await transport.health()).status, 'ok');
        await transport.close();
        await assert.rejects(unary(without, 'Health', {}, {}, 3000), (e: grpc.ServiceError) =>
          [grpc.status.UNAVAILABLE, grpc.status.DEADLINE_EXCEEDED].includes(e.code),
        );
      } finally {
        withCert.close();
        without.close();
      }
    });
  });

  test('a bad certificate path or a key without its certificate fails at start', async () => {
    await assert.rejects(
      startServer({
        port: 0,
        store: ':memory:',
        grpcTlsCert: join(dir, 'nope.pem'),
        grpcTlsKey: key,
      }),
      /Cannot read the gRPC TLS certificate/,
    );
    await assert.rejects(
      startServer({ port: 0, store: ':memory:', grpcTlsKey: key }),
      /needs both --grpc-tls-cert and --grpc-tls-key/,
    );
  });

  test('gRPC asked for beyond loopback without TLS is refused before anything listens', async () => {
    await assert.rejects(
      startServer({
        host: '0.0.0.0',
        port: 0,
        grpcPort: 0,
        store: ':memory:',
        apiKeys: 'admin:admin-key-0123456789',
      }),
      /needs TLS/,
    );
  });
});
