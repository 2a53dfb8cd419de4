/**
 * Quickstart: a producer and a worker.
 *
 *   npx node examples/quickstart.ts
 *
 * Starts an embedded OJS server on a temporary SQLite file, enqueues 100
 * jobs with the client, processes them with the worker (concurrency 10) and
 * prints `completed 100/100`. Against a server you run yourself, drop the
 * startServer() part and pass its URL (or set OJS_BACKEND_URL).
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { OjsClient, OjsWorker } from '@ojs/sdk';
import { startServer } from '@ojs/server';

// Job types and their args, shared by the producer and the worker.
type Jobs = {
  'report.generate': [reportId: number, format: 'pdf' | 'csv'];
};

const TOTAL = 100;
const dir = mkdtempSync(join(tmpdir(), 'ojs-quickstart-'));
// The embedded server logs at info by default (as `ojs serve` does): warnings only here.
const server = await startServer({
  port: 0,
  store: `sqlite:${join(dir, 'ojs.db')}`,
  logLevel: 'warn',
});

let exitCode = 0;
try {
  // Producer: enqueue 100 jobs in one batch request.
  const client = new OjsClient<Jobs>({ url: server.url });
  const jobs = await client.enqueueBatch(
    Array.from({ length: TOTAL }, (_, i) => ({
      type: 'report.generate',
      args: [i + 1, i % 2 === 0 ? 'pdf' : 'csv'],
      options: { queue: 'reports', retry: { maxAttempts: 3 } },
    })),
  );

  // Worker: a handler per job type; ctx.args is typed from the Jobs map.
  const worker = new OjsWorker<Jobs>({
    url: server.url,
    queues: ['reports'],
    concurrency: 10,
    handleSignals: false,
  });
  let completed = 0;
  const allDone = new Promise<void>((resolve) => {
    worker.on('jobCompleted', () => {
      completed++;
      if (completed === TOTAL) resolve();
    });
  });
  worker.register('report.generate', async (ctx) => {
    const [reportId, format] = ctx.args;
    await new Promise((resolve) => setTimeout(resolve, 5));
    return { reportId, file: `report-${reportId}.${format}` };
  });
  await worker.start();
  await allDone;
  await worker.stop();

  // Check the outcome on the server, not just the worker's count.
  let confirmed = 0;
  for (const job of jobs) {
    if ((await client.getJob(job.id)).state === 'completed') confirmed++;
  }
  console.log(`completed ${confirmed}/${TOTAL}`);
  if (confirmed !== TOTAL) exitCode = 1;
} catch (error) {
  console.error(error);
  exitCode = 1;
} finally {
  await server.close();
  rmSync(dir, { recursive: true, force: true });
}
process.exit(exitCode);
