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
//   <identities dir>/<actor>.token   0600  each actor's own token (CHOREO_API_TOKEN_FILE): scheduler, replication, endpoints, node-<name> per node
//   <identities dir>/<actor>.nats    0600  its own NATS user (CHOREO_NATS_CREDENTIALS), with its permissions in nats.conf
//
// Usage: node --import tsx services/kit/src/secrets/make-server-secrets.ts <nats dir> <redis dir> [<signing dir> <verify dir> [<api token file> <identities dir> <node>...]]
// Idempotent: files already there are kept (a restart keeps the passwords;
// `docker-compose down -v` removes the volumes and with them the secrets).
import { chmodSync, copyFileSync, existsSync, mkdirSync } from "node:fs";
import path from "node:path";
import { ensureEventKeys, eventKeyPaths } from "../bus/signing.js";
import { ACTOR_IDENTITIES, nodeIdentity, provisionIdentity, type Identity } from "./identities.js";
import { identityNatsPermissions, natsUserName } from "./nats-users.js";
import { natsAuthorization, randomSecret, readCredentials, redisAcl, writeCredentials, writeSecretFile, type Credentials, type NatsUser } from "./secrets.js";

function credentials(dir: string, user: string, file = path.join(dir, "credentials")): Credentials {
  if (existsSync(file)) return readCredentials(file);
  const c = { user, password: randomSecret() };
  writeCredentials(file, c);
  return c;
}

const [natsDir, redisDir, signingDir, verifyDir, apiTokenFile, identitiesDir, ...nodes] = process.argv.slice(2);
if (!natsDir || !redisDir || (signingDir && !verifyDir) || (apiTokenFile && !identitiesDir)) {
  console.error("usage: make-server-secrets.ts <nats dir> <redis dir> [<signing dir> <verify dir> [<api token file> <identities dir> <node>...]]");
  process.exit(2);
}
for (const dir of [natsDir, redisDir]) {
  mkdirSync(dir, { recursive: true });
  chmodSync(dir, 0o700);
}
const nats = credentials(natsDir, "choreo");
// Each actor its own token and NATS user (the api alone uses `choreo`, which may do everything).
const natsUsers: NatsUser[] = [nats];
if (apiTokenFile && identitiesDir) {
  mkdirSync(identitiesDir, { recursive: true });
  chmodSync(identitiesDir, 0o700);
  const actors: [string, Identity][] = [...Object.entries(ACTOR_IDENTITIES), ...nodes.map((n): [string, Identity] => [`node-${n}`, nodeIdentity(n)])];
  for (const [name, id] of actors) {
    provisionIdentity(apiTokenFile, path.join(identitiesDir, `${name}.token`), id);
    const c = credentials(identitiesDir, natsUserName(name), path.join(identitiesDir, `${name}.nats`));
    natsUsers.push({ ...c, permissions: identityNatsPermissions(id) });
  }
  console.log(
    `choreo: the api's token file ${apiTokenFile}; each actor's token and NATS credentials in ${identitiesDir} (0600): ${actors.map(([n]) => n).join(", ")}`,
  );
}
// Objects may be 1.5 MiB (the default 1 MiB payload is too small); the monitoring port serves the healthcheck only, on loopback.
writeSecretFile(path.join(natsDir, "nats.conf"), `max_payload: 8388608\nhttp: "127.0.0.1:8222"\n${natsAuthorization(natsUsers)}`);
const redis = credentials(redisDir, "api");
writeSecretFile(path.join(redisDir, "redis.conf"), redisAcl([redis]));
console.log(`choreo: credentials in ${natsDir} (nats, user ${nats.user}) and ${redisDir} (redis, user ${redis.user}), mode 0600`);
if (signingDir && verifyDir) {
  const keys = ensureEventKeys(signingDir);
  mkdirSync(verifyDir, { recursive: true });
  const pub = eventKeyPaths(verifyDir).publicKey;
  copyFileSync(keys.publicKey, pub);
  chmodSync(pub, 0o644);
  console.log(`choreo: event-signing key in ${signingDir} (0600), its public half in ${verifyDir}`);
}
