import { checkRequestJson } from '@ojs/core';
import { encodeEnqueueManyItem } from '../sdk/src/grpc-messages.ts';
import { enqueueBody } from './src/convert.ts';
import { jobReply } from './src/job-codec.ts';
import { extensionsService, ojsService } from './src/proto.ts';
import { withRequestLimits } from './src/request-limits.ts';

const items = Array.from({ length: 50 }, (_, i) =>
  encodeEnqueueManyItem('', {
    type: 'bench.job',
    args: [{ i, t: Date.now() }],
    options: { queue: 'bench' },
  }),
);
const bytes = Buffer.concat(items);
const svc = withRequestLimits(extensionsService(), 2 << 20);
const de = svc.EnqueueMany!.requestDeserialize;
function time(label: string, n: number, fn: () => void) {
  for (let i = 0; i < 200; i++) fn();
  const t = performance.now();
  for (let i = 0; i < n; i++) fn();
  console.log(label, (((performance.now() - t) * 1000) / n / 50).toFixed(2), 'µs/job');
}
time('decode (protobufjs+strict)', 2000, () => de(bytes));
const decoded = de(bytes) as any;
time('enqueueBody+check', 2000, () => {
  for (const it of decoded.items) checkRequestJson(enqueueBody(it.job, { now: Date.now() }));
});
const now = new Date().toISOString();
const record: any = {
  id: '019abcde-1234-7abc-8def-0123456789ab',
  type: 'bench.job',
  queue: 'bench',
  args: [{ i: 1, t: Date.now() }],
  meta: {},
  state: 'available',
  priority: 0,
  attempt: 0,
  retry: {
    max_attempts: 3,
    initial_interval: 'PT1S',
    backoff_coefficient: 2,
    max_interval: 'PT5M',
    jitter: true,
    non_retryable_errors: [],
    on_exhaustion: 'discard',
    backoff_strategy: 'exponential',
  },
  visibility_timeout_ms: 30000,
  created_at: now,
  enqueued_at: now,
  errors: [],
  extensions: {},
};
time('jobReply', 100, () => {
  for (let i = 0; i < 50; i++) jobReply(record);
});
time('Date.parse x5', 100, () => {
  for (let i = 0; i < 50; i++) for (let k = 0; k < 5; k++) Date.parse(now);
});
