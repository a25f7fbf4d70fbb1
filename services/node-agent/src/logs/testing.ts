import { RuntimeRequestError, type LogOptions, type Runtime } from "../runtime/runtime.js";

/**
 * A runtime double for log tests: one pod (`uid`) with containers whose
 * lines tests append with `write`; followers get them as they come. It
 * records every `logs` call and whether it ended (a follower only ends when stopped).
 */
export class FakeLogRuntime implements Pick<Runtime, "logs"> {
  readonly calls: { uid: string; opts: LogOptions; ended: boolean }[] = [];
  private readonly lines = new Map<string, string[]>();
  private readonly waiters = new Set<() => void>();

  constructor(
    readonly uid: string,
    containers: readonly string[],
  ) {
    for (const c of containers) this.lines.set(c, []);
  }

  /** Appends lines to a container's log. */
  write(container: string, ...lines: string[]): void {
    this.lines.get(container)?.push(...lines);
    for (const w of this.waiters) w();
  }

  async *logs(uid: string, opts: LogOptions, signal: AbortSignal): AsyncIterable<Uint8Array> {
    const lines = this.lines.get(opts.container);
    if (uid !== this.uid || !lines) throw new RuntimeRequestError(`container "${opts.container}" in pod is not running on this node`);
    if (opts.previous) throw new RuntimeRequestError(`previous terminated container "${opts.container}" not found`);
    const call = { uid, opts, ended: false };
    this.calls.push(call);
    const render = (from: number): Uint8Array =>
      Buffer.from(
        lines
          .slice(from)
          .map((l) => (opts.timestamps ? `2026-01-01T00:00:00Z ${l}\n` : `${l}\n`))
          .join(""),
      );
    try {
      let seen = opts.tailLines !== undefined ? Math.max(0, lines.length - opts.tailLines) : 0;
      if (lines.length > seen) yield render(seen);
      seen = lines.length;
      if (!opts.follow) return;
      while (!signal.aborted) {
        await new Promise<void>((resolve) => {
          const wake = (): void => {
            this.waiters.delete(wake);
            signal.removeEventListener("abort", wake);
            resolve();
          };
          this.waiters.add(wake);
          signal.addEventListener("abort", wake, { once: true });
        });
        if (lines.length > seen) {
          yield render(seen);
          seen = lines.length;
        }
      }
    } finally {
      call.ended = true;
    }
  }
}
