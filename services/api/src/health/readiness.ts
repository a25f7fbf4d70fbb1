// Whether this api replica should be sent requests: named checks, asked by
// the HTTP gateway's /readyz and the gRPC health service alike (one answer
// for both doors), failing for good once shutdown begins.

/** One named readiness check: true when it passes. */
export interface ReadinessCheck {
  name: string;
  check(): boolean | Promise<boolean>;
}

/** The outcome of every check, in order. */
export interface ReadinessReport {
  ready: boolean;
  checks: { name: string; ok: boolean }[];
}

/** The api's readiness: its checks, and `shutdown` once it is draining. */
export class Readiness {
  private draining = false;
  private readonly checks: ReadinessCheck[] = [];

  constructor(checks: ReadinessCheck[] = []) {
    this.checks.push(...checks);
  }

  /** Adds a check (names are unique: a second one of a name replaces the first). */
  add(name: string, check: () => boolean | Promise<boolean>): this {
    const i = this.checks.findIndex((c) => c.name === name);
    if (i >= 0) this.checks.splice(i, 1);
    this.checks.push({ name, check });
    return this;
  }

  /** From now on not ready (SIGTERM: load balancers stop sending before the doors close). */
  shutdown(): void {
    this.draining = true;
  }

  get shuttingDown(): boolean {
    return this.draining;
  }

  /** Runs every check; a check that throws fails. */
  async report(): Promise<ReadinessReport> {
    const checks = await Promise.all(
      this.checks.map(async (c) => ({
        name: c.name,
        ok: await Promise.resolve()
          .then(() => c.check())
          .catch(() => false),
      })),
    );
    checks.push({ name: "shutdown", ok: !this.draining });
    return { ready: checks.every((c) => c.ok), checks };
  }
}
