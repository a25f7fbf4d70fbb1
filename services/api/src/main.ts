// The api service: config → Redis + NATS → registry, relay, watch cache →
// NATS, gRPC and HTTP transports, until SIGTERM; then drain and exit.
import path from "node:path";
import { ApiError } from "@choreo/kit";
import { closeBus, connectBus, ensureEventKeys, ensureEventStream, eventKeyPaths, loadEventSigner, requestNatsUser, stopWhenBusClosed } from "@choreo/kit/bus";
import { runAll, signalController, sleep, stopTimeoutMs, type Runnable } from "@choreo/kit/lifecycle";
import { createLogger } from "@choreo/kit/log";
import { createRegistry as createMetricsRegistry, metricsServer } from "@choreo/kit/metrics";
import { ensureClientCa, NATS_CA_ENV, redactUrl, stripCredentials } from "@choreo/kit/secrets";
import { createGateway, ensureServingCert } from "./http/index.js";
import { FlowControl } from "./flowcontrol/flow-control.js";
import { gatewayRunnable } from "./gateway-runnable.js";
import { RootCaPublisher } from "./root-ca/publisher.js";
import { EventExpirer } from "./event-ttl/expirer.js";
import { firstServiceIp, KubernetesServiceKeeper } from "./kubernetes-service/keeper.js";
import { RedisMembership } from "./kubernetes-service/membership.js";
import { loadConfig } from "./config.js";
import { NatsLogs } from "./logs/index.js";
import { NatsPodStreams } from "./http/streams/index.js";
import { MetricsCollector, MetricsNatsDoor } from "./metrics-api/index.js";
import { GrpcTransport } from "./grpc/serve-grpc.js";
import { Readiness } from "./health/readiness.js";
import { NatsTransport } from "./nats/serve-nats.js";
import { TokenNatsDoor } from "./nats/token-door.js";
import { bootstrap, createRegistry, ensureEncryptionKeys, SecretSealer } from "./registry/index.js";
import { apiMetrics } from "./metrics.js";
import { RedisStore } from "./storage/redis-store.js";
import { instrumentStorage } from "./storage/instrumented-storage.js";
import { apiLiveness } from "./health/livez.js";
import { Relay } from "./storage/relay.js";
import { StoreRecovery, UnrecoverableError } from "./storage/recovery.js";
import { connectRedis } from "./storage/redis-connect.js";
import { LogWatermark } from "./storage/log-watermark.js";
import { ObjectCache } from "./storage/object-cache.js";
import { WatchCache } from "./storage/watch-cache.js";
import { Authenticator, AuthorizerChain, legacyAdmin } from "./auth/index.js";
import { ReloadingTokens } from "./auth/node/reloading-tokens.js";
import { NodeAuthorizer } from "./auth/node/node-authorizer.js";
import { NodeGraph, PodGraphWatch } from "./auth/node/graph.js";
import { RbacAuthorizer } from "./auth/rbac/authorizer.js";
import { RbacCache } from "./auth/rbac/cache.js";
import { checkEscalation } from "./auth/rbac/escalation.js";
import { openAuditLog } from "./audit/index.js";
import type { EscalationGuard } from "./registry/rbac/escalation-admission.js";
import { rbacRules } from "./http/reviews/index.js";
import { ensureServiceAccountKey, ServiceAccountAuthenticator, ServiceAccountTokens } from "./auth/service-account-tokens.js";
import { serviceAccountBindingCheck } from "./auth/binding-check.js";
import { BootstrapTokenAuthenticator, registrySecretGetter } from "./auth/bootstrap-tokens.js";
import { TokenCleaner } from "./auth/token-cleaner.js";
import { NodeCredentialIssuer } from "./node-credentials/issuer.js";
import { NodeCredentials, supersedingNodeLines } from "./node-credentials/authenticator.js";
import { CsrController } from "./certificates/csr-controller.js";

const config = loadConfig();
const log = createLogger({ service: "api" });
// A stop bounded: with nats-server or redis-server gone, in-flight requests would wait for good (kill -9 loses nothing).
const ac = signalController({ stopTimeoutMs: stopTimeoutMs(8_000), onTimeout: () => log.error({}, "stop timed out; exiting") });
const metrics = createMetricsRegistry("api");
const m = apiMetrics(metrics);

// Redis refuses anonymous clients: the URL's userinfo or the `user:password` file CHOREO_REDIS_CREDENTIALS names.
// One server, or the primary Sentinels name (redis+sentinel://…), followed across a failover.
const redis = connectRedis(config.redisUrl, {
  credentialsFile: process.env["CHOREO_REDIS_CREDENTIALS"],
  sentinelCredentialsFile: process.env["CHOREO_REDIS_SENTINEL_CREDENTIALS"],
  options: { maxRetriesPerRequest: 3, enableAutoPipelining: true },
  signal: ac.signal,
});
// ioredis reconnects by itself; unheard, each failed try went to stderr as "[ioredis] Unhandled error event" with its stack.
let redisErrorAt = 0;
redis.on("error", (err: Error) => {
  if (Date.now() - redisErrorAt < 5_000) return;
  redisErrorAt = Date.now();
  log.warn({ err }, "redis connection error; reconnecting");
});
const nc = await connectBus(config.natsUrl, `api-${config.replicaId}`);
stopWhenBusClosed(nc, ac, log);
const jsm = await ensureEventStream(nc, { retention: config.eventRetention, podRepublish: config.podRepublish, replicas: config.eventReplicas, log });
// Fenced while Redis is behind the event log (a lost tail): 503 and a repair from the log (storage/recovery.ts).
// Both are made below, once the registry exists.
const fence: { recovery?: StoreRecovery; cache?: WatchCache; watermark?: LogWatermark } = {};
let unreplicatedAt = 0;
const redisStore = new RedisStore(redis, {
  floor: () => fence.recovery?.floor(fence.cache?.lastRevision) ?? 0,
  onBehind: () => fence.recovery?.repairSoon(ac.signal),
  // When a write is answered (config.writeDurability): once Redis has it, once replicas have it too, or once the log does.
  waitReplicas: config.writeDurability === "replica" ? config.durabilityReplicas : 0,
  onUnreplicated: (acknowledged) => {
    if (Date.now() - unreplicatedAt < 5_000) return;
    unreplicatedAt = Date.now();
    log.warn({ acknowledged, wanted: config.durabilityReplicas }, "writes answered without their replicas' acknowledgement (WAIT timed out)");
  },
  ...(config.writeDurability === "log" ? { durable: (rev: number, written: Uint8Array) => fence.watermark?.reached(rev, written) ?? Promise.resolve() } : {}),
});
// Every store operation timed (choreo_api_store_request_duration_seconds).
const store = instrumentStorage(redisStore, m.storeLatency);
// Secrets are sealed before Redis and the event log; the counter shows which keys are still read (rotation).
const encryption = new SecretSealer(ensureEncryptionKeys(config.encryptionKeysFile), (operation, key, ok) =>
  m.secretTransformations.inc({ operation, key, status: ok ? "ok" : "error" }),
);
log.info({ file: config.encryptionKeysFile, writeKey: encryption.writeKey }, "secrets encrypted at rest");
// RBAC's escalation check needs the authorizer, which reads the roles through the registry: filled in below.
const escalation: EscalationGuard = {};
const registry = createRegistry({
  store,
  serviceCidr: config.serviceCidr,
  clusterCidr: config.clusterCidr,
  nodeCidrMaskSize: config.nodeCidrMaskSize,
  log: log.child({ subsystem: "registry" }),
  encryption,
  podSecurity: config.podSecurity,
  escalation,
  // Pods run as a ServiceAccount that exists (default) and mount its projected token, the CA and the namespace.
  serviceAccountAdmission: config.serviceAccountAdmission,
});
const cache = new WatchCache({ nc, jsm, log: log.child({ subsystem: "watch-cache" }), capacity: config.watchCacheSize });
registry.attachWatch({ cache, nc, jsm, watchers: m.watchers });
// GETs and lists with a resourceVersion (and their next pages) from every object's state in memory (storage/object-cache.ts).
const objectCache = config.objectCache
  ? new ObjectCache({ storage: store, watch: cache, log: log.child({ subsystem: "object-cache" }), registry: metrics })
  : undefined;
registry.store.objectCache = objectCache;
registry.store.consistentListFromCache = config.consistentListFromCache;
const signer = loadEventSigner(config.eventSigningKey ?? ensureEventKeys(path.join(config.dataDir, "pki")).privateKey);
// The repair puts back only what the api signed: a forged message in the log keeps the store fenced.
const recovery = new StoreRecovery({ redis, nc, jsm, registry: registry.store, log: log.child({ subsystem: "recovery" }), verifier: signer.verifier() });
const watermark = config.writeDurability === "log" ? new LogWatermark(cache) : undefined;
Object.assign(fence, { recovery, cache, watermark });
// Nothing is served, and nothing written (the bootstrap objects), before Redis holds every revision the log holds.
for (let attempt = 0; ; attempt++) {
  try {
    await recovery.repair(ac.signal);
    break;
  } catch (err) {
    if (err instanceof UnrecoverableError || ac.signal.aborted) {
      log.fatal({ err }, "api cannot start: the store is behind the event log");
      process.exit(1);
    }
    log.warn({ err, attempt }, "store check against the event log failed; retrying");
    await sleep(Math.min(5_000, 250 * 2 ** attempt), ac.signal);
  }
}
// A Redis back after an outage may have come back older (its AOF's last second, a restored file): checked again.
let redisWasDown = false;
redis.on("close", () => (redisWasDown = true));
redis.on("ready", () => {
  if (!redisWasDown) return;
  redisWasDown = false;
  recovery.repairSoon(ac.signal);
});
// The system namespaces and default policy (idempotent): retried while the store refuses writes (a primary without its
// replicas under min-replicas-to-write, a failover) rather than exiting.
for (let attempt = 0; ; attempt++) {
  try {
    await bootstrap(registry);
    break;
  } catch (err) {
    if (ac.signal.aborted || !(err instanceof ApiError && (err.status.code === 503 || err.status.code === 504))) throw err;
    log.warn({ err, attempt }, "bootstrap objects not written: the store is unavailable; retrying");
    await sleep(Math.min(5_000, 250 * 2 ** attempt), ac.signal);
  }
}

// Who asks: a client certificate of the cluster's client CA, else a token of the token file.
// Re-read when it changes: a node agent provisioned after the api starts (its line appended) is known at its first request.
const tokens = new ReloadingTokens(config.tokenFile, {
  onReload: (users, err) =>
    err ? log.error({ err, tokenFile: config.tokenFile }, "token file unreadable; keeping the tokens last read") : log.info({ users }, "token file reloaded"),
});
const clientCa = await ensureClientCa(path.join(config.dataDir, "pki"));
// ServiceAccount tokens: signed here, good while their account (and pod) exist.
const saTokens = new ServiceAccountTokens({ key: ensureServiceAccountKey(path.join(config.dataDir, "pki")) });
// Joined nodes' tokens (choreo join): Secrets kube-system/node-credential-<node> holding their SHA-256, shared by every
// replica, kept in memory from the registry's watch (read from the store for a token the cache does not know yet).
// While nats-server is away the watch stands still: listed again every second (as the RBAC cache).
let busAway = false;
const nodeCredentials = new NodeCredentials({
  handlers: registry,
  log: log.child({ subsystem: "node-credentials" }),
  stale: () => busAway,
  onRefused: (node, why) => log.info({ node, why }, "node credential token refused"),
});
const authentication = new Authenticator({
  tokens: [
    nodeCredentials,
    // A node joined before its credential was a Secret keeps its line; once it joins again, the Secret's token only.
    supersedingNodeLines(tokens, nodeCredentials),
    new ServiceAccountAuthenticator(saTokens, serviceAccountBindingCheck(registry)),
    // Bootstrap tokens (Secrets bootstrap-token-<id> in kube-system): system:bootstrap:<id>, for `choreo join`.
    new BootstrapTokenAuthenticator(registrySecretGetter(registry), {
      onRefused: (id, why) => log.info({ tokenId: id, why }, "bootstrap token refused"),
    }),
  ],
  clientCerts: true,
});
// What they may do: system:masters anything; everyone else what RBAC grants (the roles kept in memory from the registry).
// While nats-server is away the watches stand still but the store takes writes: the roles are relisted every second until it is back.
void (async () => {
  for await (const st of nc.status()) if (st.type === "disconnect" || st.type === "reconnect") busAway = st.type === "disconnect";
})().catch(() => undefined);
const rbac = new RbacCache({ handlers: registry, log: log.child({ subsystem: "rbac" }), stale: () => busAway });
const rbacAuthorizer = new RbacAuthorizer(rbac);
// A node reads only its pods and what they use, writes only its own Node, Lease and pods (the node authorizer, from a
// graph of every pod kept from the registry's watch); RBAC decides the rest.
const nodeGraph = new NodeGraph();
// While nats-server is away the watch stands still: the pods are listed again every second (as the RBAC cache).
const nodeGraphWatch = new PodGraphWatch({ handlers: registry, graph: nodeGraph, log: log.child({ subsystem: "node-authorizer" }), stale: () => busAway });
const authorizer = new AuthorizerChain([new NodeAuthorizer(nodeGraph), rbacAuthorizer]);
escalation.check = (user, req) => checkEscalation(user, req, rbacAuthorizer, authorizer);
// One JSON line per request of every door (Kubernetes' audit.k8s.io/v1 Event), as the policy says; CHOREO_AUDIT_LOG="" turns it off.
const audit = config.audit.file
  ? await openAuditLog({
      file: config.audit.file,
      ...(config.audit.policyFile ? { policy: config.audit.policyFile } : {}),
      maxSizeMB: config.audit.maxSizeMB,
      maxBackups: config.audit.maxBackups,
      log: log.child({ subsystem: "audit" }),
      metrics,
    })
  : undefined;
log.info({ tokenFile: config.tokenFile, users: tokens.size, clientCa: clientCa.certFile }, "authentication ready");
// Pods verify the api by the kubernetes Service's names and cluster IP, and the advertise address (a certificate made before keeps its names).
const tls = await ensureServingCert(config.dataDir, [
  config.host,
  ...(config.advertiseAddress ? [config.advertiseAddress] : []),
  firstServiceIp(config.serviceCidr),
  "kubernetes",
  "kubernetes.default",
  "kubernetes.default.svc",
  "kubernetes.default.svc.cluster.local",
]);
// Whether to send this replica requests: /readyz and the gRPC health service answer from these checks (health/).
let watchCacheReady = false;
void cache.ready.then(() => (watchCacheReady = true));
const readiness = new Readiness()
  .add("redis", () => redis.status === "ready")
  .add("nats", () => !busAway && !nc.isClosed())
  .add("watch-cache", () => watchCacheReady)
  .add("rbac", () => rbac.synced())
  .add("node-graph", () => nodeGraphWatch.synced())
  .add("node-credentials", () => nodeCredentials.synced());
// Not ready from SIGTERM on: load balancers and health watchers move away while the doors drain.
ac.signal.addEventListener("abort", () => readiness.shutdown(), { once: true });
const logs = new NatsLogs({ nc, handlers: registry, log: log.child({ subsystem: "logs" }) });
const streams = new NatsPodStreams({ nc, handlers: registry });
// metrics.k8s.io: the node agents' usage, asked for when a client asks (kubectl top, autoscalers).
const metricsCollector = new MetricsCollector({ nc, handlers: registry, log: log.child({ subsystem: "metrics-api" }), registry: metrics });
// API Priority and Fairness: every door's requests wait for a seat of their priority level (services/api/src/flowcontrol).
const flowControl = config.flowControl.concurrency > 0 ? new FlowControl({ ...config.flowControl, registry: metrics }) : undefined;
const gateway = createGateway({
  handlers: registry,
  logs,
  streams,
  metrics: metricsCollector,
  log: log.child({ subsystem: "http" }),
  authentication,
  authorizer,
  ...(audit ? { audit } : {}),
  reviews: { rules: rbacRules(rbacAuthorizer), tokens: authentication, apiAudiences: saTokens.apiAudiences },
  tokenIssuer: saTokens,
  readiness,
  // choreo join: a bootstrap token exchanged for a node's token (its digest a Secret every replica reads) and NATS user.
  nodeCredentials: new NodeCredentialIssuer({
    secrets: registry,
    onWritten: (secret) => nodeCredentials.observe(secret),
    tokenFile: config.tokenFile,
    natsUser: (node) => requestNatsUser(nc, node),
    natsUrl: stripCredentials(config.natsUrl),
    natsCaFile: process.env[NATS_CA_ENV],
    eventVerifyKeyFile: eventKeyPaths(path.join(config.dataDir, "pki")).publicKey,
    log: log.child({ subsystem: "node-credentials" }),
  }),
  registry: metrics,
  ...(flowControl ? { flowControl } : {}),
  liveness: apiLiveness(),
  serverAddress: `${config.host}:${config.httpsPort}`,
});
// Node agents run only what carries this key's signature (the public half beside it).
const relay = new Relay({
  redis,
  nc,
  jsm,
  log: log.child({ subsystem: "relay" }),
  id: config.replicaId,
  signer,
  crashBeforePublishEvery: config.faultCrashBeforePublishEvery,
  crashAfterPublishEvery: config.faultCrashAfterPublishEvery,
  onBacklog: (n) => m.reportBacklog(n),
  onPublished: (n) => m.relayPublished.inc(n),
  // A Redis split brain's leftover: the store gave out a revision the log holds for another change (storage/recovery.ts).
  onDiverged: async (revision) => (await recovery.rebuild(revision, ac.signal)) !== undefined,
});

/** `r`, started once the RBAC cache has listed every role and binding, the node graph every pod and the node credentials. */
function afterSync(r: Runnable): Runnable {
  return {
    name: r.name,
    async start(signal) {
      await rbac.waitSynced(signal).catch(() => undefined);
      await nodeGraphWatch.waitSynced(signal).catch(() => undefined);
      await nodeCredentials.waitSynced(signal).catch(() => undefined);
      if (signal.aborted) return;
      log.info({ door: r.name }, "rbac synced; door opening");
      await r.start(signal);
    },
  };
}

// The NATS doors' one way in: every actor sends its own token (a request without one is 401, unless
// CHOREO_NATS_HEADERLESS_ADMIN=1: a cluster whose actors have none yet), RBAC decides, the audit log records.
const natsAuth = {
  authentication,
  authorizer,
  ...(audit ? { audit } : {}),
  headerless: process.env["CHOREO_NATS_HEADERLESS_ADMIN"] === "1" ? legacyAdmin() : undefined,
};
const natsRequest = (method: string, code: number, s: number) => m.observeRequest("nats", method, code, s);

log.info(
  { http: config.httpPort, https: config.httpsPort, grpc: config.grpcPort, nats: redactUrl(config.natsUrl), redis: redactUrl(config.redisUrl) },
  "api starting",
);
try {
  await runAll(
    [
      relay,
      cache,
      ...(watermark ? [watermark] : []),
      ...(objectCache ? [objectCache] : []),
      nodeGraphWatch,
      nodeCredentials,
      // Like the other doors, opened once RBAC has listed the roles (before, every actor would get 403).
      afterSync(
        new NatsTransport({
          nc,
          handlers: registry,
          log: log.child({ subsystem: "nats" }),
          onRequest: natsRequest,
          ...(flowControl ? { flowControl } : {}),
          ...natsAuth,
        }),
      ),
      // metrics.k8s.io over NATS: the same token, RBAC (get/list pods|nodes.metrics.k8s.io) and audit as the other methods.
      afterSync(
        new MetricsNatsDoor({
          nc,
          collector: metricsCollector,
          log: log.child({ subsystem: "metrics-api" }),
          ...natsAuth,
        }),
      ),
      // choreo.api.createToken: the node agents' projected ServiceAccount tokens (create serviceaccounts/token; a node only for its own pods).
      afterSync(
        new TokenNatsDoor({
          nc,
          handlers: registry,
          issuer: saTokens,
          log: log.child({ subsystem: "nats" }),
          onRequest: natsRequest,
          ...natsAuth,
        }),
      ),
      // kube-root-ca.crt in every namespace: the CA pods verify the api with.
      new RootCaPublisher({ handlers: registry, caPem: tls.caPem, log: log.child({ subsystem: "root-ca" }) }),
      // CertificateSigningRequests: nodes' client certificates approved (csrapprover), approved client ones signed with the client CA.
      new CsrController({ handlers: registry, ca: clientCa, log: log.child({ subsystem: "csr" }) }),
      // Expired bootstrap tokens' Secrets deleted (Kubernetes' tokencleaner).
      new TokenCleaner({ handlers: registry, log: log.child({ subsystem: "token-cleaner" }) }),
      // Events expire CHOREO_EVENT_TTL after their last write (kube-apiserver's --event-ttl, 1 h).
      ...(config.eventTtlMs > 0
        ? [
            new EventExpirer({
              handlers: registry,
              ttlMs: config.eventTtlMs,
              log: log.child({ subsystem: "event-ttl" }),
              onExpired: (n) => m.eventsExpired.inc(n),
            }),
          ]
        : []),
      {
        // The doors open to users only once the roles are known: before, everyone but system:masters would get 403.
        name: "rbac-cache",
        async start(signal: AbortSignal) {
          rbac.start();
          await new Promise<void>((resolve) => signal.addEventListener("abort", () => resolve(), { once: true }));
          await rbac.stop();
        },
      },
      afterSync(
        new GrpcTransport({
          handlers: registry,
          log: log.child({ subsystem: "grpc" }),
          host: config.host,
          port: config.grpcPort,
          authentication,
          authorizer,
          // TLS as on HTTPS (serving certificate, client certificates of the client CA or tokens) unless CHOREO_API_GRPC_INSECURE=1.
          ...(config.grpcInsecure ? {} : { tls: { cert: tls.cert, key: tls.key, clientCa: clientCa.pem } }),
          readiness,
          onRequest: (method: string, code: number, s: number) => m.observeRequest("grpc", method, code, s),
          ...(flowControl ? { flowControl } : {}),
          ...(audit ? { audit } : {}),
        }),
      ),
      afterSync(
        gatewayRunnable(gateway, {
          host: config.host,
          httpPort: config.httpPort,
          httpsPort: config.httpsPort,
          tls: { cert: tls.cert, key: tls.key, clientCa: clientCa.pem },
        }),
      ),
      // default/kubernetes: the Service pods reach the api through, its Endpoints the advertise address.
      new KubernetesServiceKeeper({
        handlers: registry,
        serviceCidr: config.serviceCidr,
        httpsPort: config.httpsPort,
        advertiseAddress: config.advertiseAddress,
        log: log.child({ subsystem: "kubernetes-service" }),
        // Every live replica in the Endpoints (replicas each writing only themselves rewrote them endlessly).
        ...(config.advertiseAddress && config.httpsPort
          ? { membership: new RedisMembership(redis, { ip: config.advertiseAddress, port: config.httpsPort }) }
          : {}),
      }),
      // https on the advertise address too when the api binds another one (the gateway closes both).
      ...(config.advertiseAddress && config.httpsPort && !["0.0.0.0", "::", config.advertiseAddress].includes(config.host)
        ? [
            afterSync({
              name: "https-advertise",
              async start(signal: AbortSignal) {
                // Not fatal: the api still serves on its host; pods then find no api behind the Service.
                await gateway
                  .listen({ host: config.advertiseAddress ?? "", httpsPort: config.httpsPort, tls: { cert: tls.cert, key: tls.key, clientCa: clientCa.pem } })
                  .catch((err: unknown) => log.error({ err, advertiseAddress: config.advertiseAddress }, "https not listening on the advertise address"));
                await new Promise<void>((resolve) => (signal.aborted ? resolve() : signal.addEventListener("abort", () => resolve(), { once: true })));
              },
            }),
          ]
        : []),
      metricsServer({ registry: metrics, port: config.metricsPort, host: config.metricsHost }),
    ],
    ac.signal,
    // A failed runnable aborts the process's controller: the stop timeout bounds that stop too (a runnable that waits
    // on one that failed would otherwise keep the api up, serving nothing, and its supervisor would never restart it).
    { log, onFailure: (err) => ac.abort(err) },
  );
} catch (err) {
  log.fatal({ err }, "api failed");
  process.exitCode = 1;
} finally {
  await closeBus(nc);
  redis.disconnect();
  await audit?.close();
  log.info({}, "api stopped");
}
