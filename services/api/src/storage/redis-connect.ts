// The api's Redis connection: one server (`redis://host:port`), or a
// primary found through Sentinels (`redis+sentinel://h:p,h:p,h:p/<master>`),
// which ioredis follows across a failover (it asks the sentinels again on a
// lost connection and hears their +switch-master). The data nodes'
// credentials come from the URL's userinfo or CHOREO_REDIS_CREDENTIALS; the
// sentinels' password from CHOREO_REDIS_SENTINEL_CREDENTIALS.
import { Redis, type RedisOptions } from "ioredis";
import { readCredentials, redisConnectUrl } from "@choreo/kit/secrets";

/** The sentinels and master name of a `redis+sentinel://` URL; undefined for any other URL. */
export function parseSentinelUrl(
  url: string,
): { sentinels: { host: string; port: number }[]; name: string; credentials?: { user: string; password: string } } | undefined {
  const m = /^redis\+sentinel:\/\/(?:([^@/:]*):([^@/]*)@)?([^/@]+)\/([A-Za-z0-9_.-]+)\/?$/.exec(url);
  if (!m) {
    if (url.startsWith("redis+sentinel:")) throw new Error(`CHOREO_REDIS_URL ${url}: expected redis+sentinel://host:port[,host:port…]/<master name>`);
    return undefined;
  }
  const sentinels = m[3]!.split(",").map((hp) => {
    const at = hp.lastIndexOf(":");
    const host = at > 0 ? hp.slice(0, at).replace(/^\[|\]$/g, "") : hp;
    const port = at > 0 ? Number(hp.slice(at + 1)) : 26379;
    if (!host || !Number.isInteger(port) || port <= 0 || port > 65535) throw new Error(`CHOREO_REDIS_URL: bad sentinel address ${JSON.stringify(hp)}`);
    return { host, port };
  });
  const credentials = m[1] && m[2] ? { user: decodeURIComponent(m[1]), password: decodeURIComponent(m[2]) } : undefined;
  return { sentinels, name: m[4]!, ...(credentials ? { credentials } : {}) };
}

export interface RedisConnectOptions {
  /** `user:password` of the data nodes (CHOREO_REDIS_CREDENTIALS). */
  credentialsFile?: string | undefined;
  /** `default:password` of the sentinels (CHOREO_REDIS_SENTINEL_CREDENTIALS). */
  sentinelCredentialsFile?: string | undefined;
  options?: RedisOptions;
  /** The process's shutdown: until it aborts, a client ioredis gave up on connects again. */
  signal?: AbortSignal;
}

/** A connection to the one Redis, or to the primary the sentinels name. */
export function connectRedis(url: string, opts: RedisConnectOptions = {}): Redis {
  const sentinel = parseSentinelUrl(url);
  if (!sentinel) return new Redis(redisConnectUrl(url, opts.credentialsFile), opts.options ?? {});
  const clients = new Set<Redis>();
  const keep = (r: Redis): Redis => {
    clients.add(r);
    keptConnected(r, opts.signal);
    r.on("end", () => opts.signal?.aborted && clients.delete(r));
    // A duplicate (the relay's blocking reader) follows failovers too.
    const duplicate = r.duplicate.bind(r);
    r.duplicate = (override?: Partial<RedisOptions>) => keep(duplicate(override));
    return r;
  };
  const main = keep(sentinelClient(sentinel, opts));
  watchSwitchMaster(sentinel, opts, clients);
  return main;
}

/**
 * Hears the sentinels' +switch-master for our primary and makes every
 * client connect again (to the new primary): a primary that hangs
 * (SIGSTOP, a frozen VM) keeps its connections open, and without this the
 * clients would wait on it — every request hanging — until it woke up.
 * (ioredis' own failoverDetector does this too, but ends a client that is
 * reconnecting at that moment: see sentinelClient.)
 */
function watchSwitchMaster(sentinel: NonNullable<ReturnType<typeof parseSentinelUrl>>, opts: RedisConnectOptions, clients: Set<Redis>): void {
  const s = opts.sentinelCredentialsFile ? readCredentials(opts.sentinelCredentialsFile) : undefined;
  let i = 0;
  const listen = (): void => {
    if (opts.signal?.aborted) return;
    const at = sentinel.sentinels[i++ % sentinel.sentinels.length]!;
    const sub = new Redis({ host: at.host, port: at.port, ...(s ? { password: s.password } : {}), retryStrategy: () => null, maxRetriesPerRequest: 0 });
    sub.on("error", () => undefined);
    // Lost (that sentinel gone): the next one, a moment later.
    sub.on("end", () => setTimeout(listen, 500));
    opts.signal?.addEventListener("abort", () => sub.disconnect(), { once: true });
    sub.on("message", (_channel: string, message: string) => {
      // "<master name> <old ip> <old port> <new ip> <new port>"
      if (message.split(" ")[0] !== sentinel.name) return;
      for (const c of clients) if (c.status === "ready") c.disconnect(true);
    });
    sub.subscribe("+switch-master").catch(() => sub.disconnect());
  };
  listen();
}

/**
 * Connects again when ioredis gives up (status end) while `signal` has not
 * aborted: a connect that fails outright (not a refused one, which it
 * retries) ends the client, and every later command would fail at once.
 */
function keptConnected(r: Redis, signal: AbortSignal | undefined): Redis {
  r.on("end", () => {
    if (signal?.aborted) return;
    setTimeout(() => {
      if (r.status === "end" && !signal?.aborted) r.connect().catch(() => undefined);
    }, 100);
  });
  return r;
}

function sentinelClient(sentinel: NonNullable<ReturnType<typeof parseSentinelUrl>>, opts: RedisConnectOptions): Redis {
  const data = sentinel.credentials ?? (opts.credentialsFile ? readCredentials(opts.credentialsFile) : undefined);
  const s = opts.sentinelCredentialsFile ? readCredentials(opts.sentinelCredentialsFile) : undefined;
  return new Redis({
    ...opts.options,
    sentinels: sentinel.sentinels,
    name: sentinel.name,
    ...(data ? { username: data.user, password: data.password } : {}),
    ...(s ? { sentinelPassword: s.password } : {}),
    // No failoverDetector: its +switch-master disconnect, arriving while the client reconnects after losing the
    // primary, ends the client for good ("Connection is closed.", status end). A killed or failed-over primary
    // closes its connections, which is what the client follows.
    // Asked again every 100 ms while the primary is away (a failover takes 1-3 s with a 1 s down-after), never given up.
    sentinelRetryStrategy: () => 100,
    retryStrategy: () => 100,
  });
}
