// Temporary profiling server (not committed).
import { Engine } from '@ojs/engine';
import { SqliteStore } from '@ojs/store-sqlite';
import { startGrpcServer } from './src/index.ts';

const store = new SqliteStore({ path: '/tmp/grpc-prof/p.db', synchronous: 'full' } as never);
await store.init();
const engine = new Engine({ store });
engine.start();
const server = await startGrpcServer({ engine, port: 19090 });
process.on('SIGINT', async () => {
  console.log('calls', (globalThis as any).__n, 'items', (globalThis as any).__items);
  await server.close();
  await engine.stop();
  await store.close();
  process.exit(0);
});
console.log('ready');
