// Secrets on disk (0600 files, `user:password` credentials) and the
// server-side auth config of nats-server and redis-server.
export {
  randomSecret,
  writeSecretFile,
  readSecretFile,
  fileMode,
  writeCredentials,
  readCredentials,
  urlCredentials,
  stripCredentials,
  withCredentials,
  redactUrl,
  clientCredentials,
  natsConnectOptions,
  redisConnectUrl,
  natsAuthorization,
  redisAcl,
} from "./secrets.js";
export type { Credentials } from "./secrets.js";
export { clientCaPaths, ensureCa, ensureClientCa, signCert, signClientCert } from "./client-ca.js";
export type { CaFiles, ClientCa } from "./client-ca.js";
export { BUS_SANS, NATS_CA_ENV, busTlsPaths, ensureBusTls, isLoopbackHost, natsTlsBlock } from "./bus-tls.js";
export type { BusTlsFiles } from "./bus-tls.js";
export {
  ACTOR_IDENTITIES,
  API_TOKEN_FILE_ENV,
  NODES_GROUP,
  actorIdentity,
  actorToken,
  ensureTokenFile,
  hollowNodesIdentity,
  nodeIdentity,
  provisionIdentity,
  readTokenFile,
  tokenLine,
} from "./identities.js";
export type { Identity } from "./identities.js";
export type { NatsPermissions, NatsUser } from "./secrets.js";
export {
  EVENT_READER_JS_SUBJECTS,
  actorNatsPermissions,
  eventsReaderNatsPermissions,
  subscriberNatsPermissions,
  hollowNodesNatsPermissions,
  identityNatsPermissions,
  natsUserName,
  nodeNatsPermissions,
} from "./nats-users.js";
