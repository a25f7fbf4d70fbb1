// Store latency as Prometheus sees it (etcd_request_duration_seconds in
// kube-apiserver): every store operation timed, by operation and resource.
import type { ObjectStorage } from "./object-storage.js";

/** Where the timings go (a SeriesHistogram labelled operation, resource): one series per operation and resource. */
export interface StoreTimings {
  series(operation: string, resource: string): { observe(seconds: number): void };
}

/** The operations timed; the rest (allocations, the node lock) pass through untouched. */
const TIMED = ["get", "write", "list", "indexMembers", "restore", "currentRevision"] as const;
type Timed = (typeof TIMED)[number];

/** The operation label of a call: a write is told by its mode (create, update, delete), as etcd's txn types. */
function operationOf(op: Timed, args: readonly unknown[]): string {
  if (op === "write") return (args[0] as { mode?: string } | undefined)?.mode ?? "write";
  return op === "indexMembers" ? "index" : op;
}

/**
 * `store` with its operations timed into `timings` (failed ones too). A Proxy,
 * so everything else of the store (its class, its other members) stays as it is.
 */
export function instrumentStorage<S extends ObjectStorage>(store: S, timings: StoreTimings): S {
  // The series by operation and resource, kept: found by two map lookups per call.
  const kept = new Map<string, Map<string, { observe(seconds: number): void }>>();
  const seriesOf = (operation: string, resource: string): { observe(seconds: number): void } => {
    let byResource = kept.get(operation);
    if (!byResource) kept.set(operation, (byResource = new Map()));
    let series = byResource.get(resource);
    if (!series) byResource.set(resource, (series = timings.series(operation, resource)));
    return series;
  };
  return new Proxy(store, {
    get(target, prop, receiver) {
      const value: unknown = Reflect.get(target, prop, receiver);
      if (typeof value !== "function" || !(TIMED as readonly (string | symbol)[]).includes(prop)) return value;
      const op = prop as Timed;
      return (...args: unknown[]): unknown => {
        const started = performance.now();
        const series = seriesOf(
          operationOf(op, args),
          op === "currentRevision"
            ? ""
            : String(op === "write" || op === "restore" ? ((args[0] as { resource?: string } | undefined)?.resource ?? "") : args[0]),
        );
        const result = (value as (...a: unknown[]) => Promise<unknown>).apply(target, args);
        // Inline closures: one held in a named const is wrapped in tsx's __name (a defineProperty per call: 0.55 % of the api's busy time).
        void result.then(
          () => series.observe((performance.now() - started) / 1000),
          () => series.observe((performance.now() - started) / 1000),
        );
        return result;
      };
    },
  });
}
