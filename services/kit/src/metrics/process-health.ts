// The named checks of an actor process's /livez and /readyz, found among the
// runnables it runs: the bus connection, every informer's first list, and
// each leader elector's lease (a standby is ready; a leader that stopped
// renewing is not).
import type { Runnable } from "../lifecycle/index.js";
import { eventLoopCheck, HealthChecks } from "./health.js";

/** The part of a NATS connection the checks read. */
export interface BusLike {
  isClosed(): boolean;
  status(): AsyncIterable<{ type: string }>;
}

/** A runnable that lists before it is useful (an Informer). */
interface Syncing {
  hasSynced(): boolean;
}

/** A runnable holding or waiting for a lease (a LeaderElector). */
interface Electing {
  leaseHealthy(): boolean;
}

function isSyncing(r: unknown): r is Runnable & Syncing {
  return typeof (r as Partial<Syncing>).hasSynced === "function";
}

function isElecting(r: unknown): r is Runnable & Electing {
  return typeof (r as Partial<Electing>).leaseHealthy === "function";
}

/**
 * Whether the bus is connected now: false from a `disconnect` status until
 * the `reconnect`, and for good once the connection is closed.
 */
export function busConnectedCheck(nc: BusLike): () => boolean {
  let away = false;
  void (async () => {
    for await (const st of nc.status()) if (st.type === "disconnect" || st.type === "reconnect") away = st.type === "disconnect";
  })().catch(() => undefined);
  return () => !away && !nc.isClosed();
}

/**
 * /livez and /readyz of an actor process (pass both to `metricsServer`):
 *
 * - livez: `ping`, `event-loop` (turned within 10 s), `bus-open` (not closed
 *   for good: a restart would reconnect);
 * - readyz: `bus` (connected now), `informers-synced` (each informer among
 *   `runnables` listed once), `leader-election` when one runs (a standby
 *   passes; a leader whose lease went unrenewed past its duration fails).
 */
export function processHealth(nc: BusLike, runnables: readonly Runnable[]): { livez: HealthChecks; readyz: HealthChecks } {
  const livez = new HealthChecks({ ping: () => true, "event-loop": eventLoopCheck(), "bus-open": () => !nc.isClosed() });
  const readyz = new HealthChecks({ bus: busConnectedCheck(nc) });
  const informers = runnables.filter(isSyncing);
  readyz.add("informers-synced", () => informers.every((i) => i.hasSynced()));
  const electors = runnables.filter(isElecting);
  if (electors.length > 0) readyz.add("leader-election", () => electors.every((e) => e.leaseHealthy()));
  return { livez, readyz };
}
