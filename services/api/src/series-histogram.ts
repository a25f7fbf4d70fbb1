// A Prometheus histogram whose series the caller keeps: `series(...values)`
// once per label set, then `observe(seconds)` on it — a bucket scan and two
// additions. prom-client's Histogram checks and hashes the labels object on
// every observation (validateLabel, hashObject; its `labels(...)` children
// too), ~1.3 % of the api's busy time for the request and store histograms.
// Scraped through the same Registry, in prom-client's exposition format.
import type { Metric, Registry } from "prom-client";

/** One label set's counts: per bucket (not cumulative), and the sum and count of what was observed. */
export class HistogramSeries {
  readonly counts: number[];
  sum = 0;
  count = 0;

  constructor(
    readonly labels: Readonly<Record<string, string>>,
    private readonly bounds: readonly number[],
  ) {
    this.counts = new Array<number>(bounds.length).fill(0);
  }

  observe(value: number): void {
    if (!Number.isFinite(value)) throw new TypeError(`Value is not a valid number: ${value}`);
    const b = this.bounds;
    for (let i = 0; i < b.length; i++) {
      if (value <= b[i]) {
        this.counts[i]++;
        break;
      }
    }
    this.sum += value;
    this.count++;
  }
}

interface Value {
  labels: Record<string, string | number>;
  sharedLabels: Record<string, string>;
  value: number;
  metricName: string;
  /** prom-client's shape: null on buckets, undefined on sum and count (no exemplars here). */
  exemplar: null | undefined;
}

export interface SeriesHistogramOptions {
  name: string;
  help: string;
  labelNames: readonly string[];
  buckets: readonly number[];
  registers?: Registry[];
}

export class SeriesHistogram {
  readonly name: string;
  readonly help: string;
  readonly type = "histogram";
  readonly aggregator = "sum";
  readonly labelNames: readonly string[];
  private readonly bounds: readonly number[];
  /** By label values, each as `<length>:<text>` (no two label sets meet). */
  private readonly table = new Map<string, HistogramSeries>();

  constructor(opts: SeriesHistogramOptions) {
    this.name = opts.name;
    this.help = opts.help;
    this.labelNames = opts.labelNames;
    this.bounds = [...opts.buckets].sort((a, b) => a - b);
    // The registry reads name, help, type, get() and reset(): what prom-client's own metrics offer it.
    for (const r of opts.registers ?? []) r.registerMetric(this as unknown as Metric);
  }

  /** The series of these label values, in labelNames' order (made on first use; keep it). */
  series(...values: string[]): HistogramSeries {
    if (values.length !== this.labelNames.length) throw new Error(`${this.name}: ${this.labelNames.length} label values expected, got ${values.length}`);
    let key = "";
    for (const v of values) key += `${v.length}:${v}`;
    let s = this.table.get(key);
    if (!s) {
      const labels: Record<string, string> = {};
      this.labelNames.forEach((n, i) => (labels[n] = values[i]));
      this.table.set(key, (s = new HistogramSeries(labels, this.bounds)));
    }
    return s;
  }

  /** As prom-client's Histogram: per series its cumulative buckets, +Inf, sum and count (series labels as sharedLabels). */
  getForPromString(): { name: string; help: string; type: string; aggregator: string; values: Value[] } {
    const values: Value[] = [];
    const bucket = `${this.name}_bucket`;
    for (const s of this.table.values()) {
      let acc = 0;
      for (let i = 0; i < this.bounds.length; i++) {
        acc += s.counts[i];
        values.push({ labels: { le: this.bounds[i] }, sharedLabels: s.labels, value: acc, metricName: bucket, exemplar: null });
      }
      values.push({ labels: { le: "+Inf" }, sharedLabels: s.labels, value: s.count, metricName: bucket, exemplar: null });
      values.push({ labels: {}, sharedLabels: s.labels, value: s.sum, metricName: `${this.name}_sum`, exemplar: undefined });
      values.push({ labels: {}, sharedLabels: s.labels, value: s.count, metricName: `${this.name}_count`, exemplar: undefined });
    }
    return { name: this.name, help: this.help, type: this.type, aggregator: this.aggregator, values };
  }

  /** As prom-client's get(): the series labels folded into each value's labels. */
  get(): { name: string; help: string; type: string; aggregator: string; values: Omit<Value, "sharedLabels">[] } {
    const data = this.getForPromString();
    return { ...data, values: data.values.map(({ sharedLabels, labels, ...rest }) => ({ ...rest, labels: { ...labels, ...sharedLabels } })) };
  }

  /** Zeroes every series (kept series stay usable). */
  reset(): void {
    for (const s of this.table.values()) {
      s.counts.fill(0);
      s.sum = 0;
      s.count = 0;
    }
  }
}
