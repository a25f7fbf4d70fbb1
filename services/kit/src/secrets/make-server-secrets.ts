// Makes the credentials of a nats-server and a redis-server where a
// container cluster keeps them (docker-compose.yml's `secrets` service runs
// this once, before the servers start, into two volumes):
//
//   <nats dir>/nats.conf     0600  max_payload, monitoring on loopback, the `authorization` block (user choreo)
//   <nats dir>/credentials   0600  choreo:<password>   (CHOREO_NATS_CREDENTIALS of every service)
//   <redis dir>/redis.conf   0600  the ACL: default off, user api   (redis-server's config)
//   <redis dir>/credentials  0600  api:<password>      (CHOREO_REDIS_CREDENTIALS of the api)
//   <signing dir>/event-signing.key  0600  the api's Ed25519 event-signing key (CHOREO_EVENT_SIGNING_KEY of the api)
//   <verify dir>/event-signing.pub   0644  its public half (CHOREO_EVENT_VERIFY_KEY of the node agents, which never see the private key)
//   <api token file>                 0600  the api's token file: the administrator's bare token, then one line per actor identity
//   <identities dir>/<actor>/token   0600  each actor's own token (CHOREO_API_TOKEN_FILE): scheduler, replication, endpoints, node-<name> per node
//   <identities dir>/<actor>/nats    0600  its own NATS user (CHOREO_NATS_CREDENTIALS), with its permissions in nats.conf
//   <identities dir>/api/nats        0600  the api's (user choreo, a copy of <nats dir>/credentials)
//   <identities dir>/*/nats-ca.crt   0644  with --nats-tls: the CA every NATS client verifies the server with (CHOREO_NATS_CA)
//   <identities dir>/prometheus/token 0600  the monitoring profile's Prometheus: user system:choreo-prometheus in group
//                                    system:monitoring alone (RBAC: get /metrics, /livez, /readyz — nothing else), no NATS user
//   <nats dir>/tls/server.{crt,key}, ca.crt  with --nats-tls: the server's certificate (SANs nats, localhost, 127.0.0.1),
//                                    key 0600; nats.conf gets a `tls` block naming them under <dir as nats-server sees it>
// With --nats-cluster=<name>,<name>,… (docker-compose.ha.yml): nats.conf gets a
// `cluster` block (listen 6222, routes to every named member, a route password
// of their own in <nats dir>/route-credentials) and the TLS certificate names
// every member too; each member gives its own server_name with `-n`.
// With --redis-sentinel: redis.conf also makes every node authenticate to
// whichever is primary as `api` (masteruser/masterauth), and
//   <redis dir>/sentinel.conf          0600  a Sentinel's starting config (monitor `choreo` at host `redis`,
//                                            quorum 2, hostnames resolved and announced; each sentinel copies it)
//   <redis dir>/sentinel-credentials   0600  default:<password> (CHOREO_REDIS_SENTINEL_CREDENTIALS of the api)
// One directory per actor: compose mounts each actor's own volume there, so
// no actor container holds another's token or NATS password.
//
// Usage: node --import tsx services/kit/src/secrets/make-server-secrets.ts [--nats-tls=<nats dir as nats-server sees it>]
//          <nats dir> <redis dir> [<signing dir> <verify dir> [<api token file> <identities dir> <node>...]]
// Idempotent: files already there are kept (a restart keeps the passwords;
// `docker-compose down -v` removes the volumes and with them the secrets).
import { chmodSync, copyFileSync, existsSync, mkdirSync } from "node:fs";
import path from "node:path";
import { ensureEventKeys, eventKeyPaths } from "../bus/signing.js";
import { BUS_SANS, busTlsPaths, ensureBusTls, natsTlsBlock } from "./bus-tls.js";
import { ACTOR_IDENTITIES, nodeIdentity, provisionIdentity, type Identity } from "./identities.js";
import { identityNatsPermissions, natsUserName } from "./nats-users.js";
import { natsAuthorization, randomSecret, readCredentials, redisAcl, writeCredentials, writeSecretFile, type Credentials, type NatsUser } from "./secrets.js";

function credentials(dir: string, user: string, file = path.join(dir, "credentials")): Credentials {
  if (existsSync(file)) return readCredentials(file);
  const c = { user, password: randomSecret() };
  writeCredentials(file, c);
  return c;
}

/** The monitoring profile's Prometheus: only the system:monitoring ClusterRole (bound to the group of that name). */
const PROMETHEUS_IDENTITY: Identity = { user: "system:choreo-prometheus", groups: ["system:monitoring"] };

const args = process.argv.slice(2);
const tlsFlag = args.find((a) => a.startsWith("--nats-tls="));
const clusterFlag = args.find((a) => a.startsWith("--nats-cluster="));
const sentinelFlag = args.find((a) => a === "--redis-sentinel");
const members = clusterFlag?.slice("--nats-cluster=".length).split(",").filter(Boolean) ?? [];
const [natsDir, redisDir, signingDir, verifyDir, apiTokenFile, identitiesDir, ...nodes] = args.filter(
  (a) => a !== tlsFlag && a !== clusterFlag && a !== sentinelFlag,
);
const natsTlsAs = tlsFlag?.slice("--nats-tls=".length);
if (!natsDir || !redisDir || (signingDir && !verifyDir) || (apiTokenFile && !identitiesDir) || natsTlsAs === "") {
  console.error(
    "usage: make-server-secrets.ts [--nats-tls=<nats dir as nats-server sees it>] <nats dir> <redis dir> [<signing dir> <verify dir> [<api token file> <identities dir> <node>...]]",
  );
  process.exit(2);
}
for (const dir of [natsDir, redisDir]) {
  mkdirSync(dir, { recursive: true });
  chmodSync(dir, 0o700);
}
const nats = credentials(natsDir, "choreo");
// nats-server beyond loopback (the compose network): TLS with a certificate of the bus's own CA.
const sans = [...BUS_SANS, ...members.filter((m) => !BUS_SANS.includes(m))];
const tls = natsTlsAs ? await ensureBusTls(path.join(natsDir, "tls"), sans) : undefined;
if (tls) console.log(`choreo: nats-server's TLS certificate in ${path.dirname(tls.certFile)} (SANs ${sans.join(", ")}; key 0600)`);

/** `<identities dir>/<actor>/` (0700) with the NATS CA when there is TLS. */
function identityDir(actor: string): string {
  const dir = path.join(identitiesDir ?? "", actor);
  mkdirSync(dir, { recursive: true });
  chmodSync(dir, 0o700);
  if (tls) {
    copyFileSync(tls.caFile, path.join(dir, "nats-ca.crt"));
    chmodSync(path.join(dir, "nats-ca.crt"), 0o644);
  }
  return dir;
}

// Each actor its own token and NATS user (the api alone uses `choreo`, which may do everything).
const natsUsers: NatsUser[] = [nats];
if (apiTokenFile && identitiesDir) {
  mkdirSync(identitiesDir, { recursive: true });
  chmodSync(identitiesDir, 0o700);
  const actors: [string, Identity][] = [...Object.entries(ACTOR_IDENTITIES), ...nodes.map((n): [string, Identity] => [`node-${n}`, nodeIdentity(n)])];
  for (const [name, id] of actors) {
    const dir = identityDir(name);
    provisionIdentity(apiTokenFile, path.join(dir, "token"), id);
    const c = credentials(dir, natsUserName(name), path.join(dir, "nats"));
    natsUsers.push({ ...c, permissions: identityNatsPermissions(id) });
  }
  writeCredentials(path.join(identityDir("api"), "nats"), nats);
  // Prometheus scrapes the api's /metrics on the gateway with a token of its own, as a ServiceAccount would (no bus access).
  provisionIdentity(apiTokenFile, path.join(identityDir("prometheus"), "token"), PROMETHEUS_IDENTITY);
  console.log(
    `choreo: the api's token file ${apiTokenFile}; each actor's token and NATS credentials in its own directory of ${identitiesDir} (0600): api, ${actors.map(([n]) => n).join(", ")}, prometheus`,
  );
}
// Objects may be 1.5 MiB (the default 1 MiB payload is too small); the monitoring port serves the healthcheck only, on loopback.
const tlsBlock = natsTlsAs ? natsTlsBlock(busTlsPaths(path.join(natsTlsAs, "tls"))) : "";
// Routes between the members: a password of their own (plain TCP on the compose network: see docker-compose.ha.yml).
const route = members.length ? credentials(natsDir, "route", path.join(natsDir, "route-credentials")) : undefined;
const clusterBlock = route
  ? [
      "cluster {",
      '  name: "choreo"',
      '  listen: "0.0.0.0:6222"',
      // Clients use the members they were given (names the certificate holds), not the container addresses the members would gossip.
      "  no_advertise: true",
      `  authorization { user: ${JSON.stringify(route.user)}, password: ${JSON.stringify(route.password)} }`,
      `  routes: [ ${members.map((m) => JSON.stringify(`nats-route://${route.user}:${encodeURIComponent(route.password)}@${m}:6222`)).join(", ")} ]`,
      "}",
      "",
    ].join("\n")
  : "";
writeSecretFile(path.join(natsDir, "nats.conf"), `max_payload: 8388608\nhttp: "127.0.0.1:8222"\n${tlsBlock}${clusterBlock}${natsAuthorization(natsUsers)}`);
const redis = credentials(redisDir, "api");
const replication = sentinelFlag ? `masteruser ${redis.user}\nmasterauth ${redis.password}\n` : "";
writeSecretFile(path.join(redisDir, "redis.conf"), `${redisAcl([redis])}${replication}`);
if (sentinelFlag) {
  const sentinel = credentials(redisDir, "default", path.join(redisDir, "sentinel-credentials"));
  writeSecretFile(
    path.join(redisDir, "sentinel.conf"),
    [
      "port 26379",
      `requirepass ${sentinel.password}`,
      `sentinel sentinel-pass ${sentinel.password}`,
      "sentinel resolve-hostnames yes",
      "sentinel announce-hostnames yes",
      "sentinel monitor choreo redis 6379 2",
      `sentinel auth-user choreo ${redis.user}`,
      `sentinel auth-pass choreo ${redis.password}`,
      "sentinel down-after-milliseconds choreo 1000",
      "sentinel failover-timeout choreo 5000",
      "sentinel parallel-syncs choreo 1",
      "",
    ].join("\n"),
  );
  console.log(`choreo: Sentinels' config and password in ${redisDir} (0600)`);
}
console.log(`choreo: credentials in ${natsDir} (nats, user ${nats.user}) and ${redisDir} (redis, user ${redis.user}), mode 0600`);
if (signingDir && verifyDir) {
  const keys = ensureEventKeys(signingDir);
  mkdirSync(verifyDir, { recursive: true });
  const pub = eventKeyPaths(verifyDir).publicKey;
  copyFileSync(keys.publicKey, pub);
  chmodSync(pub, 0o644);
  console.log(`choreo: event-signing key in ${signingDir} (0600), its public half in ${verifyDir}`);
}
