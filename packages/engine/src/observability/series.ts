/**
 * Counters and histograms whose label sets are bound once, for the metrics
 * counted per job and per request (decision 0123).
 *
 * prom-client's children (`counter.labels(...)`) hash their label object
 * on every `inc()` and `observe()` (`hashObject`: a string built per call)
 * and look the series up by it: on the drain profile that was 4 % of the
 * server's main thread and 1 KB of garbage per job. Here `labels()` returns
 * the series itself, so counting is an addition to a field. The metrics
 * are still prom-client's: they register in its `Registry`, which reads
 * them at scrape time through `get()` / `getForPromString()` in exactly the
 * shape prom-client's own Counter and Histogram return (series in creation
 * order, cumulative buckets then `+Inf`, `_sum`, `_count`), so the
 * exposition text is the same byte for byte (test/series.test.ts compares
 * them).
 */
import type { Registry } from 'prom-client';

type Labels = Record<string, string>;

interface MetricConfig {
  name: string;
  help: string;
  labelNames: readonly string[];
  registers: Registry[];
}

interface Sample {
  value: number;
  labels: Record<string, string | number>;
  metricName?: string;
  sharedLabels?: Labels;
  exemplar?: null | undefined;
}

interface MetricData {
  name: string;
  help: string;
  type: 'counter' | 'histogram';
  values: Sample[];
  aggregator: 'sum';
}

function labelsOf(names: readonly string[], values: readonly string[], metric: string): Labels {
  if (values.length !== names.length) {
    throw new Error(`${metric}: ${names.length} label values expected, got ${values.length}`);
  }
  const labels: Labels = {};
  for (let i = 0; i < names.length; i++) labels[names[i]!] = values[i]!;
  return labels;
}

/** One label set of a SeriesCounter. */
export class CounterSeries {
  value = 0;
  readonly labels: Labels;
  constructor(labels: Labels) {
    this.labels = labels;
  }
  inc(amount = 1): void {
    this.value += amount;
  }
}

/** What both kinds share: a name, a help text and the series by label values, in creation order. */
abstract class LabeledMetric<S> {
  readonly name: string;
  readonly help: string;
  readonly aggregator = 'sum';
  readonly #labelNames: readonly string[];
  protected readonly series = new Map<string, S>();

  constructor(config: MetricConfig) {
    this.name = config.name;
    this.help = config.help;
    this.#labelNames = config.labelNames;
    for (const registry of config.registers) registry.registerMetric(this as never);
  }

  protected abstract create(labels: Labels): S;

  /** The series of these label values, created the first time. */
  labels(...values: string[]): S {
    const key = values.join('\u0000');
    let series = this.series.get(key);
    if (series === undefined) {
      series = this.create(labelsOf(this.#labelNames, values, this.name));
      this.series.set(key, series);
    }
    return series;
  }
}

/**
 * A monotonic counter (prom-client `counter` type). A series is exported
 * from its creation, at 0 (as prom-client's `inc(0)` makes it).
 */
export class SeriesCounter extends LabeledMetric<CounterSeries> {
  readonly type = 'counter';

  protected create(labels: Labels): CounterSeries {
    return new CounterSeries(labels);
  }

  async get(): Promise<MetricData> {
    const values: Sample[] = [];
    for (const series of this.series.values()) {
      values.push({ value: series.value, labels: { ...series.labels } });
    }
    return { name: this.name, help: this.help, type: 'counter', values, aggregator: 'sum' };
  }

  reset(): void {
    for (const series of this.series.values()) series.value = 0;
  }
}

/** One label set of a SeriesHistogram. */
export class HistogramSeries {
  readonly labels: Labels;
  /** Observations per bucket (not cumulative), in `upperBounds` order. */
  readonly counts: Float64Array;
  sum = 0;
  /** Observations so far; a series is exported once it has one (as prom-client creates it at its first). */
  count = 0;
  readonly #upperBounds: readonly number[];

  constructor(labels: Labels, upperBounds: readonly number[]) {
    this.labels = labels;
    this.#upperBounds = upperBounds;
    this.counts = new Float64Array(upperBounds.length);
  }

  observe(value: number): void {
    if (!Number.isFinite(value)) throw new TypeError(`Value is not a valid number: ${value}`);
    const bounds = this.#upperBounds;
    for (let i = 0; i < bounds.length; i++) {
      if (value <= bounds[i]!) {
        this.counts[i]! += 1;
        break;
      }
    }
    this.sum += value;
    this.count += 1;
  }
}

/** A histogram with fixed buckets (prom-client `histogram` type). */
export class SeriesHistogram extends LabeledMetric<HistogramSeries> {
  readonly type = 'histogram';
  readonly #upperBounds: readonly number[];

  constructor(config: MetricConfig & { buckets: readonly number[] }) {
    super(config);
    this.#upperBounds = [...config.buckets];
  }

  protected create(labels: Labels): HistogramSeries {
    return new HistogramSeries(labels, this.#upperBounds);
  }

  /** The registry's exposition reads this form: `le` apart from the series' labels. */
  async getForPromString(): Promise<MetricData> {
    const bucket = `${this.name}_bucket`;
    const values: Sample[] = [];
    for (const series of this.series.values()) {
      if (series.count === 0) continue;
      const shared = series.labels;
      let cumulative = 0;
      for (let i = 0; i < this.#upperBounds.length; i++) {
        cumulative += series.counts[i]!;
        values.push({
          labels: { le: this.#upperBounds[i]! },
          sharedLabels: shared,
          value: cumulative,
          metricName: bucket,
          exemplar: null,
        });
      }
      values.push(
        {
          labels: { le: '+Inf' },
          sharedLabels: shared,
          value: series.count,
          metricName: bucket,
          exemplar: null,
        },
        {
          labels: {},
          sharedLabels: shared,
          value: series.sum,
          metricName: `${this.name}_sum`,
          exemplar: undefined,
        },
        {
          labels: {},
          sharedLabels: shared,
          value: series.count,
          metricName: `${this.name}_count`,
          exemplar: undefined,
        },
      );
    }
    return { name: this.name, help: this.help, type: 'histogram', values, aggregator: 'sum' };
  }

  /** JSON form (`getMetricsAsJSON`): each sample's labels with `le` first, then the series'. */
  async get(): Promise<MetricData> {
    const data = await this.getForPromString();
    data.values = data.values.map(({ sharedLabels, labels, ...rest }) => ({
      ...rest,
      labels: { ...labels, ...sharedLabels },
    }));
    return data;
  }

  reset(): void {
    for (const series of this.series.values()) {
      series.counts.fill(0);
      series.sum = 0;
      series.count = 0;
    }
  }
}
