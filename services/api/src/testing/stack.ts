import { Redis } from "ioredis";
import type { JetStreamManager } from "@nats-io/jetstream";
import type { NatsConnection } from "@nats-io/transport-node";
import { generateKeyPairSync, randomBytes } from "node:crypto";
import { connectBus, ensureEventStream, EventSigner, EventVerifier } from "@choreo/kit/bus";
import { ApiClient } from "@choreo/kit/client";
import { runAll } from "@choreo/kit/lifecycle";
import { silentLogger, type Logger } from "@choreo/kit/log";
import { startNats, startRedis, type ServerHandle } from "@choreo/kit/testing";
import { NatsTransport } from "../nats/serve-nats.js";
import { bootstrap, createRegistry, SecretSealer, type EncryptionKey, type Registry } from "../registry/index.js";
import { RedisStore } from "../storage/redis-store.js";
import { StoreRecovery } from "../storage/recovery.js";
import { Relay } from "../storage/relay.js";
import { WatchCache } from "../storage/watch-cache.js";

/** An api stack in this process over real nats-server and redis-server, for tests. */
export interface Stack {
  nats: ServerHandle;
  redis: ServerHandle;
  nc: NatsConnection;
  jsm: JetStreamManager;
  redisClient: Redis;
  store: RedisStore;
  registry: Registry;
  cache: WatchCache;
  client: ApiClient;
  relay: Relay;
  /** What the relay calls when the store diverged from the log (it rebuilds the store, as the api does). */
  recovery: StoreRecovery;
  /** The relay's signer (a test publishing as another api replica would, with the same key). */
  signer: EventSigner;
  /** Checks the relay's signatures (give it to node agents' connections with requireSignedEvents). */
  verifier: EventVerifier;
  stop(): Promise<void>;
}

/** Starts servers, the registry, relay, watch cache and the NATS transport. */
export async function startStack(opts: { retention?: number; watchCacheSize?: number; encryptionKeys?: EncryptionKey[]; log?: Logger } = {}): Promise<Stack> {
  const [nats, redis] = await Promise.all([startNats(), startRedis()]);
  const nc = await connectBus(nats.url, "test-api");
  const jsm = await ensureEventStream(nc, { retention: opts.retention ?? 100_000 });
  const redisClient = new Redis(redis.url, { enableAutoPipelining: true });
  const store = new RedisStore(redisClient);
  const log = opts.log ?? silentLogger();
  // Secrets sealed at rest as in the api: under the given keys, else a random one.
  const encryption = new SecretSealer(opts.encryptionKeys ?? [{ name: "test", secret: randomBytes(32) }]);
  const registry = createRegistry({ store, serviceCidr: "10.96.0.0/16", log, encryption });
  const cache = new WatchCache({ nc, jsm, log, capacity: opts.watchCacheSize ?? 10_000 });
  registry.attachWatch({ cache, nc, jsm });
  await bootstrap(registry);
  const ac = new AbortController();
  const keys = generateKeyPairSync("ed25519");
  const signer = new EventSigner(keys.privateKey);
  const verifier = new EventVerifier(keys.publicKey);
  const recovery = new StoreRecovery({ redis: redisClient, nc, jsm, registry: registry.store, log, verifier });
  const relay = new Relay({
    redis: redisClient,
    nc,
    jsm,
    log,
    id: "test",
    signer,
    onDiverged: async (revision) => (await recovery.rebuild(revision, ac.signal)) !== undefined,
  });
  const running = runAll([relay, cache, new NatsTransport({ nc, handlers: registry, log })], ac.signal);
  await cache.ready;
  const clientConn = await connectBus(nats.url, "test-client");
  const client = new ApiClient(clientConn);
  return {
    nats,
    redis,
    nc,
    jsm,
    redisClient,
    store,
    registry,
    cache,
    client,
    relay,
    recovery,
    signer,
    verifier,
    async stop() {
      ac.abort();
      await running.catch(() => undefined);
      await clientConn.close();
      await nc.close();
      redisClient.disconnect();
      await Promise.all([nats.stop(), redis.stop()]);
    },
  };
}
