/**
 * OpenTelemetry end to end (issue 16): the SDK client's enqueue span and the
 * SDK worker's process span form one trace through `meta.traceparent`, with
 * the server's own spans in it; measured with an in-memory exporter. Without
 * a registered tracer provider nothing is traced and meta is left alone.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { SpanKind, SpanStatusCode, trace } from '@opentelemetry/api';
import {
  BasicTracerProvider,
  InMemorySpanExporter,
  type ReadableSpan,
  SimpleSpanProcessor,
} from '@opentelemetry/sdk-trace-base';
import { MODES, startTestServer, type TestServer, testStores } from './helpers.ts';

const exporter = new InMemorySpanExporter();
const provider = new BasicTracerProvider({ spanProcessors: [new SimpleSpanProcessor(exporter)] });

/** The finished spans about one job (by its id attribute). */
function spansOf(jobId: string): ReadableSpan[] {
  return exporter.getFinishedSpans().filter((span) => span.attributes['ojs.job.id'] === jobId);
}

for (const store of await testStores()) {
  describe(`OpenTelemetry traces (${store})`, () => {
    let server: TestServer;
    before(async () => {
      server = await startTestServer({ store });
    });
    after(async () => {
      trace.disable();
      await server.close();
    });

    it('without a tracer provider nothing is traced and meta carries no traceparent', async () => {
      const client = server.client('http');
      const job = await client.enqueue('trace.none', [], { queue: `tr-none-${store}` });
      assert.equal(job?.meta.traceparent, undefined);
      assert.equal(exporter.getFinishedSpans().length, 0);
    });

    for (const mode of MODES) {
      it(`one trace spans enqueue -> execution (${mode})`, async () => {
        trace.setGlobalTracerProvider(provider);
        const queue = `tr-${mode}-${store}`;
        const client = server.client(mode);
        const worker = server.worker(mode, { queues: [queue], logLevel: 'silent' });
        worker.register('trace.ok', async () => 'done');
        worker.register('trace.fail', async () => {
          throw new Error('handler broke');
        });
        const ok = await client.enqueue('trace.ok', [1], { queue });
        const failing = await client.enqueue('trace.fail', [2], {
          queue,
          retry: { maxAttempts: 1 },
        });
        assert.match(String(ok?.meta.traceparent), /^00-[0-9a-f]{32}-[0-9a-f]{16}-01$/);
        await worker.start();
        try {
          await client.waitForJob(ok!.id, { intervalMs: 20 });
          await client.waitForJob(failing!.id, { intervalMs: 20 });
          // The worker's span ends when the handler settles; wait for both.
          for (let i = 0; i < 200 && spansOf(failing!.id).length < 4; i++) {
            await new Promise((resolve) => setTimeout(resolve, 10));
          }
        } finally {
          await worker.stop({ timeoutMs: 0 });
        }
        for (const [job, failed] of [
          [ok!, false],
          [failing!, true],
        ] as const) {
          const spans = spansOf(job.id);
          const byName = (name: string) => spans.find((span) => span.name === name);
          const enqueue = spans.filter((s) => s.name === `${queue} enqueue`);
          assert.ok(enqueue.every((s) => s.kind === SpanKind.PRODUCER));
          const producer = enqueue.find((s) => s.instrumentationScope.name === 'ojs-sdk')!;
          const process = spans.find((s) => s.name === `${queue} process`)!;
          assert.ok(producer && process, `spans: ${spans.map((s) => s.name).join(', ')}`);
          assert.equal(process.kind, SpanKind.CONSUMER);
          // One trace: every span about the job shares the producer's trace id.
          const traceId = producer.spanContext().traceId;
          for (const span of spans) assert.equal(span.spanContext().traceId, traceId, span.name);
          assert.equal(process.parentSpanContext?.spanId, producer.spanContext().spanId);
          assert.equal(process.links[0]?.context.spanId, producer.spanContext().spanId);
          assert.equal(job.meta.traceparent, `00-${traceId}-${producer.spanContext().spanId}-01`);
          assert.equal(process.attributes['messaging.system'], 'ojs');
          assert.equal(process.attributes['messaging.destination.name'], queue);
          assert.equal(process.attributes['ojs.job.type'], job.type);
          assert.equal(process.attributes['ojs.job.attempt'], 1);
          assert.equal(process.status.code, failed ? SpanStatusCode.ERROR : SpanStatusCode.UNSET);
          if (mode === 'http') {
            // The server's spans join the same trace: its enqueue under the producer's.
            const serverEnqueue = enqueue.find((s) => s.instrumentationScope.name === 'ojs-server');
            assert.equal(serverEnqueue?.parentSpanContext?.spanId, producer.spanContext().spanId);
            const attempt = byName(`${queue} attempt`);
            assert.equal(attempt?.attributes['ojs.job.state'], failed ? 'discarded' : 'completed');
          }
        }
        trace.disable();
        exporter.reset();
      });
    }
  });
}
