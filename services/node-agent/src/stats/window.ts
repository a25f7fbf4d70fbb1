// A short history of cumulative CPU readings, so that a rate can be given at
// any moment (metrics-server's two scrapes, kept by the agent itself).

/** One reading: when, cumulative CPU time, and the working set then. */
export interface Sample {
  /** Milliseconds since the epoch. */
  atMs: number;
  /** Cumulative CPU time in ns (a counter: it only grows while the same process group runs). */
  cpuNs: bigint;
  /** Working set in bytes at `atMs`. */
  memoryBytes: bigint;
}

/** Usage over a window: a CPU rate and the newest working set. */
export interface WindowUsage {
  cpuNanocores: bigint;
  memoryBytes: bigint;
  /** When the window ends (the newest sample), ms since the epoch. */
  endMs: number;
  windowMs: number;
}

/**
 * The rate between two readings, as metrics-server computes it from two
 * scrapes: Δcpu / Δt in nanocores; undefined when the counter went
 * backwards (a restart) or no time passed.
 */
export function rate(older: Sample, newer: Sample): WindowUsage | undefined {
  const dt = newer.atMs - older.atMs;
  if (dt <= 0 || newer.cpuNs < older.cpuNs) return undefined;
  // ns of CPU per ns of wall time × 1e9 = nanocores: Δns × 1e9 / (dt ms × 1e6).
  const cpuNanocores = ((newer.cpuNs - older.cpuNs) * 1_000n) / BigInt(dt);
  return { cpuNanocores, memoryBytes: newer.memoryBytes, endMs: newer.atMs, windowMs: dt };
}

/**
 * The readings of one counter within `spanMs` of the newest. A reading
 * lower than the one before (the container restarted) starts afresh.
 */
export class SampleWindow {
  private samples: Sample[] = [];

  constructor(private readonly spanMs: number) {}

  add(s: Sample): void {
    const last = this.samples.at(-1);
    if (last && (s.cpuNs < last.cpuNs || s.atMs < last.atMs)) this.samples = [];
    this.samples.push(s);
    // Keep the newest reading at least spanMs old as the window's start.
    while (this.samples.length > 2 && this.samples[1]!.atMs <= s.atMs - this.spanMs) this.samples.shift();
  }

  /** The rate over the whole window; undefined with fewer than two readings. */
  usage(): WindowUsage | undefined {
    const first = this.samples[0];
    const last = this.samples.at(-1);
    return first && last && first !== last ? rate(first, last) : undefined;
  }

  get length(): number {
    return this.samples.length;
  }
}
