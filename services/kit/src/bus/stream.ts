import { jetstreamManager, RetentionPolicy, StorageType, DiscardPolicy, type JetStreamManager } from "@nats-io/jetstream";
import { connect, type ConnectionOptions, type NatsConnection, type Subscription } from "@nats-io/transport-node";
import type { Logger } from "../log/index.js";
import { NATS_CA_ENV } from "../secrets/bus-tls.js";
import { natsConnectOptions } from "../secrets/secrets.js";
import { EVENT_PREFIX, EVENT_STREAM, POD_REPUBLISH } from "./subjects.js";

/** Options of the event stream. */
export interface EventStreamOptions {
  /** How many changes the log keeps; older revisions answer 410. */
  retention?: number;
  /**
   * JetStream replicas (`num_replicas`; default 1, one server). 3 on a
   * 3-server NATS cluster: a publish is acknowledged once 2 of the 3 servers
   * hold it. An existing stream with another count is scaled to this one
   * (nats-server 2.9 does it in place, the other settings kept); when the
   * server refuses (e.g. one server, not clustered) that is logged and the
   * stream kept as it is.
   */
  replicas?: number;
  /** Where a refused change of the replica count is reported. */
  log?: Logger;
  /** Republish pod changes live when the stream is made (default true; false only to compare: node agents then read through a consumer each). */
  podRepublish?: boolean;
}

/**
 * Creates the event stream if missing (idempotent; updates the retention
 * and the replica count).
 * A new stream republishes pod changes to their live subjects
 * (`POD_REPUBLISH`, what `followEvents` reads). nats-server 2.9 cannot add
 * a RePublish to an existing stream: a stream made before it keeps working,
 * and node agents then read their pods through a filtered consumer each, as
 * before (`hasPodRepublish`).
 */
export async function ensureEventStream(nc: NatsConnection, opts: EventStreamOptions = {}): Promise<JetStreamManager> {
  const jsm = await jetstreamManager(nc);
  const config = {
    name: EVENT_STREAM,
    subjects: [`${EVENT_PREFIX}.>`],
    retention: RetentionPolicy.Limits,
    storage: StorageType.File,
    discard: DiscardPolicy.Old,
    max_msgs: opts.retention ?? 1_000_000,
    num_replicas: opts.replicas ?? 1,
    max_msg_size: 8 * 1024 * 1024,
    duplicate_window: 2 * 60 * 1_000_000_000,
    ...(opts.podRepublish === false ? {} : { republish: { ...POD_REPUBLISH } }),
  };
  try {
    const info = await jsm.streams.info(EVENT_STREAM);
    if (info.config.max_msgs !== config.max_msgs) await jsm.streams.update(EVENT_STREAM, { max_msgs: config.max_msgs });
    if (info.config.num_replicas !== config.num_replicas) await scaleEventStream(jsm, info.config.num_replicas, config.num_replicas, opts.log);
  } catch (err) {
    if (!/stream not found/i.test(String((err as Error).message))) throw err;
    await jsm.streams.add(config);
  }
  return jsm;
}

/** Changes the event stream's replica count in place (nats-server 2.9 scales a stream up or down); a refusal is logged, the stream kept. */
async function scaleEventStream(jsm: JetStreamManager, from: number, to: number, log: Logger | undefined): Promise<void> {
  try {
    // streams.update sends the stream's whole config with this one field changed: RePublish, retention and dedup stay.
    await jsm.streams.update(EVENT_STREAM, { num_replicas: to });
    log?.info({ stream: EVENT_STREAM, from, to }, "event stream replicas changed");
  } catch (err) {
    log?.error({ err, stream: EVENT_STREAM, from, to }, "event stream replicas not changed; the stream keeps its count");
  }
}

/** Whether the event stream republishes pod changes to their live subjects (streams made before it do not). */
export async function hasPodRepublish(jsm: JetStreamManager): Promise<boolean> {
  const info = await jsm.streams.info(EVENT_STREAM);
  const rp = info.config.republish;
  return rp?.src === POD_REPUBLISH.src && rp.dest === POD_REPUBLISH.dest;
}

/** First and last revision the log holds (first > last when it is empty). */
export async function streamState(jsm: JetStreamManager): Promise<{ firstRevision: number; lastRevision: number; messages: number }> {
  const info = await jsm.streams.info(EVENT_STREAM);
  return { firstRevision: info.state.first_seq, lastRevision: info.state.last_seq, messages: info.state.messages };
}

/**
 * Closes a process's NATS connection on its way out: drains it (pending
 * messages handled, subscriptions unsubscribed, publishes flushed) for at
 * most `timeoutMs`, then closes it whatever happened. nats.js's drain ends
 * with a flush; with the server stopped or unreachable that flush never
 * answers or rejects, drain then neither finishes nor closes, and the
 * connection's reconnect timers keep the process alive for good (a SIGTERM
 * during a NATS outage left every actor running). Never rejects.
 */
export async function closeBus(nc: NatsConnection, timeoutMs = 3_000): Promise<void> {
  if (nc.isClosed()) return;
  let timer: NodeJS.Timeout | undefined;
  const drained = nc.isDraining() ? Promise.resolve() : nc.drain().catch(() => undefined);
  await Promise.race([drained, new Promise<void>((resolve) => (timer = setTimeout(resolve, timeoutMs)))]);
  clearTimeout(timer);
  if (!nc.isClosed()) await nc.close().catch(() => undefined);
}

/**
 * Drains subscriptions on a server's way out (in-flight messages handled,
 * then unsubscribed) for at most `timeoutMs`, then unsubscribes what is
 * left: a drain ends with a flush that a stopped nats-server never answers.
 * Never rejects.
 */
export async function drainSubscriptions(subs: readonly Subscription[], timeoutMs = 2_000): Promise<void> {
  let timer: NodeJS.Timeout | undefined;
  const drained = Promise.all(subs.map((s) => (s.isClosed() ? undefined : s.drain().catch(() => undefined))));
  await Promise.race([drained, new Promise<void>((resolve) => (timer = setTimeout(resolve, timeoutMs)))]);
  clearTimeout(timer);
  for (const s of subs) if (!s.isClosed()) s.unsubscribe();
}

/**
 * Stops the process (aborts `ac`, whose stop timeout then exits for the supervisor to restart it) when `nc`
 * closes while the process is not stopping: nats.js closes a connection for good only when it gives up or is
 * told to, and a process without its bus does nothing while it looks alive.
 */
export function stopWhenBusClosed(nc: NatsConnection, ac: AbortController, log: Logger): void {
  void nc.closed().then((err) => {
    if (ac.signal.aborted) return;
    log.error({ err }, "NATS connection closed for good; stopping");
    ac.abort(err ?? new Error("the NATS connection closed"));
  });
}

/**
 * Connects to NATS with choreo's defaults (reconnect forever, named
 * connection) and credentials. `url` is one server or a NATS cluster's
 * members comma-separated (`nats://a:4222,nats://b:4222`): nats.js connects
 * to one of them and, losing it, reconnects to any other (and to the members
 * the servers announce). Credentials: the URL's userinfo (`nats://user:pass@host:port`,
 * which nats.js itself ignores), else the `user:password` file named by
 * `credentialsFile` (default CHOREO_NATS_CREDENTIALS). nats-server refuses
 * a client without them (Authorization Violation, not retried). With
 * `caFile` (default CHOREO_NATS_CA) it speaks TLS only, verifying the
 * server's certificate against that CA (compose's nats, beyond loopback).
 * Two authentication errors in a row do not stop the reconnecting (nats.js'
 * default does). Async stack traces are off (nats.js would build two Error objects, a
 * stack capture each, per request to name the caller of one that times
 * out: 9–14 % of the scheduler's CPU under load, ~5 % of a hollow-node
 * process's); CHOREO_NATS_ASYNC_TRACES=1 turns them back on to debug.
 * `more` adds or overrides nats.js options.
 */
export function connectBus(
  url: string,
  name: string,
  credentialsFile = process.env["CHOREO_NATS_CREDENTIALS"],
  caFile = process.env[NATS_CA_ENV] || undefined,
  more: Pick<ConnectionOptions, "noAsyncTraces"> = {},
): Promise<NatsConnection> {
  return connect({
    ...natsConnectOptions(url, credentialsFile, caFile),
    name,
    maxReconnectAttempts: -1,
    // nats.js gives up reconnecting for good after two authentication errors in a row, and nats-server's
    // 'Authentication Timeout' (no CONNECT within 2 s of the greeting) is one: a process whose event loop lagged
    // that long twice while reconnecting (5,000 hollow nodes catching up after a stall) was left without a bus,
    // alive. Credentials do not change under a running process; retrying is what reconnect-forever means.
    ignoreAuthErrorAbort: true,
    reconnectTimeWait: 250,
    pingInterval: 10_000,
    noAsyncTraces: process.env["CHOREO_NATS_ASYNC_TRACES"] !== "1",
    ...more,
  });
}
