// Named health checks answered as kube-apiserver answers /livez and /readyz:
// 200 `ok`, or 500 listing every check (`[+]bus ok`, `[-]informers failed`);
// `?verbose` lists them on success too.

/** One named check: true when it passes (a throw or rejection fails it). */
export type HealthCheckFn = () => boolean | Promise<boolean>;

/** The outcome of every check, in the order they were added. */
export interface HealthReport {
  ok: boolean;
  checks: { name: string; ok: boolean }[];
}

/** An ordered set of named checks (a second check of a name replaces the first). */
export class HealthChecks {
  private readonly checks = new Map<string, HealthCheckFn>();

  constructor(checks: Record<string, HealthCheckFn> = {}) {
    for (const [name, fn] of Object.entries(checks)) this.add(name, fn);
  }

  /** Adds (or replaces) the check `name`. */
  add(name: string, check: HealthCheckFn): this {
    this.checks.set(name, check);
    return this;
  }

  /** The names of the checks, in order. */
  get names(): string[] {
    return [...this.checks.keys()];
  }

  /** Runs every check at once. */
  async report(): Promise<HealthReport> {
    const checks = await Promise.all(
      [...this.checks].map(async ([name, fn]) => ({
        name,
        ok: await Promise.resolve()
          .then(() => fn())
          .then((v) => v === true)
          .catch(() => false),
      })),
    );
    return { ok: checks.every((c) => c.ok), checks };
  }
}

/** The status and text body of `/<endpoint>` for `report`, as kube-apiserver's healthz handler writes them. */
export function healthAnswer(endpoint: string, report: HealthReport, verbose: boolean): { status: number; body: string } {
  if (report.ok && !verbose) return { status: 200, body: "ok" };
  const lines = report.checks.map((c) => (c.ok ? `[+]${c.name} ok` : `[-]${c.name} failed: reason withheld`));
  return { status: report.ok ? 200 : 500, body: `${lines.join("\n")}\n${endpoint} check ${report.ok ? "passed" : "failed"}\n` };
}

/**
 * A check that passes while the event loop keeps turning: a timer ticks every
 * second and the check fails when the last tick is older than `maxLagMs`
 * (a loop blocked or starved by a runaway computation). The timer is unref'd.
 */
export function eventLoopCheck(maxLagMs = 10_000): HealthCheckFn {
  let last = performance.now();
  setInterval(() => (last = performance.now()), 1_000).unref();
  return () => performance.now() - last < maxLagMs;
}
