/**
 * A producer on its own, against a running server:
 *
 *   npm start                                   # in another terminal
 *   npx node examples/producer.ts 10            # enqueue 10 jobs
 *
 * The URL comes from OJS_BACKEND_URL (default http://127.0.0.1:8080).
 */
import { OjsClient, traceContext } from '@ojs/sdk';

type Jobs = { 'email.send': [to: string, template: string] };

const count = Number(process.argv[2] ?? 10);
const client = new OjsClient<Jobs>();
// Every job carries a W3C traceparent in meta, continued by the worker.
client.enqueueMiddleware.add('trace-context', traceContext.enqueue());

if (!(await client.supports('dead_letter'))) console.warn('this server has no dead letter queue');
for (let i = 0; i < count; i++) {
  const job = await client.enqueue('email.send', [`user${i}@example.com`, 'welcome'], {
    queue: 'email',
    retry: { maxAttempts: 5, initialInterval: 1000, onExhaustion: 'dead_letter' },
    timeoutMs: 10_000,
  });
  console.log(`enqueued ${job?.id}`);
}
