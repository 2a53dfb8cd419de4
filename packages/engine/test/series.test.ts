/**
 * series.ts's counters and histograms are read by prom-client's Registry
 * exactly as its own Counter and Histogram are: the same observations give
 * the same exposition text, byte for byte, and the same JSON.
 */
import assert from 'node:assert/strict';
import { it } from 'node:test';
import { Counter, Histogram, Registry } from 'prom-client';
import { SeriesCounter, SeriesHistogram } from '../src/observability/series.ts';

const BUCKETS = [0.005, 0.01, 0.1, 1, 10];
/** Values on bucket bounds, between them, under the first, over the last, and 0. */
const OBSERVED = [0, 0.001, 0.005, 0.0051, 0.01, 0.5, 1, 9.99, 10, 10.5, 1e6];

function fill(
  counter: { labels(...values: string[]): { inc(n?: number): void } },
  histogram: { labels(...values: string[]): { observe(v: number): void } },
): void {
  // Series created in this order (the exposition keeps creation order).
  const a = counter.labels('q1', 'email.send');
  const b = counter.labels('q2', 'report "weekly"\\n');
  a.inc(0);
  b.inc(0);
  a.inc();
  a.inc(2.5);
  counter.labels('q1', 'email.send').inc();
  // A series created and never counted is exported at 0.
  counter.labels('idle', 'never').inc(0);
  const h1 = histogram.labels('q1', 'email.send');
  const h2 = histogram.labels('q2', 'other');
  // A histogram series asked for but never observed is not exported.
  histogram.labels('q3', 'unobserved');
  for (const v of OBSERVED) h1.observe(v);
  h2.observe(0.02);
}

async function expositions() {
  const theirs = new Registry();
  const ours = new Registry();
  const config = (registry: Registry) => ({
    name: 'ojs_test_total',
    help: 'A test counter with "quotes" and \\ backslash.',
    labelNames: ['queue', 'type'],
    registers: [registry],
  });
  const histogramConfig = (registry: Registry) => ({
    name: 'ojs_test_seconds',
    help: 'A test histogram.',
    labelNames: ['queue', 'type'],
    buckets: BUCKETS,
    registers: [registry],
  });
  fill(new Counter(config(theirs)), new Histogram(histogramConfig(theirs)));
  fill(new SeriesCounter(config(ours)), new SeriesHistogram(histogramConfig(ours)));
  return { theirs, ours };
}

it('gives the exposition text of prom-client Counter and Histogram byte for byte', async () => {
  const { theirs, ours } = await expositions();
  const expected = await theirs.metrics();
  assert.match(expected, /ojs_test_seconds_bucket\{le="\+Inf",queue="q1",type="email.send"\} 11/);
  assert.equal(await ours.metrics(), expected);
});

it('gives the JSON of prom-client Counter and Histogram', async () => {
  const { theirs, ours } = await expositions();
  assert.deepStrictEqual(await ours.getMetricsAsJSON(), await theirs.getMetricsAsJSON());
});

it('resets like prom-client: counters to 0, histograms unexported until observed again', async () => {
  const { theirs, ours } = await expositions();
  theirs.resetMetrics();
  ours.resetMetrics();
  const counters = async (registry: Registry) =>
    (await registry.getSingleMetric('ojs_test_total')!.get()).values.map((v) => v.value);
  assert.deepEqual(await counters(ours), [0, 0, 0]);
  // prom-client drops a reset counter's series; ours keep theirs at 0
  // (the cached series stay valid): both say nothing was counted.
  assert.deepEqual(
    (await counters(theirs)).filter((v) => v !== 0),
    [],
  );
  const histogram = (registry: Registry) => registry.getSingleMetric('ojs_test_seconds')!.get();
  assert.deepEqual((await histogram(ours)).values, (await histogram(theirs)).values);
});

it('refuses a wrong number of label values and a non-finite observation', () => {
  const registry = new Registry();
  const counter = new SeriesCounter({
    name: 'c_total',
    help: 'c',
    labelNames: ['a', 'b'],
    registers: [registry],
  });
  assert.throws(() => counter.labels('only-one'), /2 label values expected, got 1/);
  const histogram = new SeriesHistogram({
    name: 'h_seconds',
    help: 'h',
    labelNames: [],
    buckets: BUCKETS,
    registers: [registry],
  });
  assert.throws(() => histogram.labels().observe(Number.NaN), /not a valid number/);
});
