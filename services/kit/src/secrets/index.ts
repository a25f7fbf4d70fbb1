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
export { clientCaPaths, ensureClientCa, signClientCert } from "./client-ca.js";
export type { ClientCa } from "./client-ca.js";
