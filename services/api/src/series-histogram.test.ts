// SeriesHistogram against prom-client's Histogram: the same observations give the same exposition text and JSON.
import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { Histogram, Registry } from "prom-client";
import { SeriesHistogram } from "./series-histogram.js";

const BUCKETS = [0.001, 0.01, 0.1, 1];
const SAMPLES: [string, string, number][] = [
  ["nats", "create", 0.0004],
  ["nats", "create", 0.001],
  ["nats", "create", 0.05],
  ["grpc", "get", 3],
  ["nats", "create", 0.2],
  ["nats", 'we"ird\\name', 0.002],
  ["grpc", "get", 0],
];

function both(): { ours: Registry; theirs: Registry; series: SeriesHistogram; histogram: Histogram<"transport" | "method"> } {
  const ours = new Registry();
  const theirs = new Registry();
  const opts = { name: "x_seconds", help: 'What "x" took.', labelNames: ["transport", "method"] as const };
  const series = new SeriesHistogram({ ...opts, buckets: [...BUCKETS].reverse(), registers: [ours] });
  const histogram = new Histogram({ ...opts, labelNames: [...opts.labelNames], buckets: BUCKETS, registers: [theirs] });
  return { ours, theirs, series, histogram };
}

describe("SeriesHistogram", () => {
  it("scrapes as prom-client's Histogram fed the same observations (text and JSON)", async () => {
    const { ours, theirs, series, histogram } = both();
    for (const [transport, method, v] of SAMPLES) {
      series.series(transport, method).observe(v);
      histogram.observe({ transport, method }, v);
    }
    assert.equal(await ours.metrics(), await theirs.metrics());
    assert.deepEqual(await ours.getMetricsAsJSON(), await theirs.getMetricsAsJSON());
    assert.match(await ours.metrics(), /x_seconds_count\{transport="nats",method="create"\} 4/);
  });

  it("a series asked for again is the same one; label values that would run together stay apart", () => {
    const { series } = both();
    assert.equal(series.series("a", "b"), series.series("a", "b"));
    assert.notEqual(series.series("ab", ""), series.series("a", "b"));
    assert.throws(() => series.series("a"), /2 label values expected/);
    assert.throws(() => series.series("a", "b").observe(Number.NaN), /not a valid number/);
  });

  it("reset zeroes every series, which stay in use", async () => {
    const { ours, series } = both();
    const s = series.series("nats", "get");
    s.observe(0.5);
    series.reset();
    assert.match(await ours.metrics(), /x_seconds_count\{transport="nats",method="get"\} 0/);
    s.observe(0.5);
    assert.match(await ours.metrics(), /x_seconds_count\{transport="nats",method="get"\} 1/);
    assert.match(await ours.metrics(), /x_seconds_bucket\{le="1",transport="nats",method="get"\} 1/);
  });
});
