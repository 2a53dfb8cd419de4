/**
 * A worker on its own, against a running server:
 *
 *   npx node examples/worker.ts
 *
 * Stops gracefully on SIGTERM / Ctrl-C: no more fetches, active jobs get
 * OJS_SHUTDOWN_TIMEOUT seconds (default 25) to finish, the rest go back to
 * the queue. A second Ctrl-C skips the wait.
 */
import { DiscardError, OjsWorker, traceContext } from '@ojs/sdk';

type Jobs = { 'email.send': [to: string, template: string] };

const worker = new OjsWorker<Jobs>({ queues: ['email'], concurrency: 8 });
worker.middleware.add('trace-context', traceContext.execution());

worker.register('email.send', async (ctx) => {
  const [to, template] = ctx.args;
  if (!to.includes('@')) throw new DiscardError(`not an address: ${to}`);
  // Pass ctx.signal to I/O so cancellation, timeouts and shutdown stop the work.
  await new Promise((resolve) => setTimeout(resolve, 200));
  ctx.log('info', 'sent', { to, template, attempt: ctx.attempt });
  return { delivered: true };
});

worker.on('jobFailed', ({ job, error }) => console.error(`job ${job.id} failed:`, error));
await worker.start();
