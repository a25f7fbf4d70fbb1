// The connection a kubeconfig names (what `choreo up` writes to
// .choreo/kubeconfig, and `choreo kubeconfig create` for a user): the
// server, its CA, and a token or a client certificate.
import { readFileSync } from "node:fs";
import path from "node:path";
import { parse } from "yaml";

/** What the current (or the named) context of a kubeconfig says. */
export interface KubeconfigConnection {
  /** `https://host:port`. */
  server: string;
  /** PEM of the CA (certificate-authority-data, or the certificate-authority file). */
  ca?: string;
  insecureSkipTlsVerify: boolean;
  token?: string;
  /** PEM client certificate and key. */
  cert?: string;
  key?: string;
  /** The context's namespace (default "default"). */
  namespace: string;
  /** The api's gRPC door, `grpcs://host:port` (cluster extension `grpc.choreo.dev`, written by `choreo up`). */
  grpcServer?: string;
  /** The event log (cluster extension `events.choreo.dev`, written by `choreo up`): NATS url and a read-only subscriber's `user:password` file. */
  eventLog?: { natsUrl: string; credentialsFile?: string };
}

/** The cluster extension naming the api's gRPC door. */
export const GRPC_EXTENSION = "grpc.choreo.dev";
/** The cluster extension naming the event log (services/cli kubeconfig.ts EVENT_LOG_EXTENSION). */
export const EVENT_LOG_EXTENSION = "events.choreo.dev";

type Raw = Record<string, unknown>;

const rec = (v: unknown): Raw => (v !== null && typeof v === "object" && !Array.isArray(v) ? (v as Raw) : {});
const str = (v: unknown): string | undefined => (typeof v === "string" && v !== "" ? v : undefined);
const b64 = (v: unknown): string | undefined => (str(v) === undefined ? undefined : Buffer.from(str(v)!, "base64").toString("utf8"));

function entry(list: unknown, name: string | undefined, field: string): Raw | undefined {
  if (!Array.isArray(list) || name === undefined) return undefined;
  const e = list.map(rec).find((x) => x["name"] === name);
  return e ? rec(e[field]) : undefined;
}

/** Reads `file` and resolves `context` (default: current-context); relative file names are read beside the kubeconfig. */
export function readKubeconfig(file: string, context?: string): KubeconfigConnection {
  const dir = path.dirname(path.resolve(file));
  const read = (p: string | undefined): string | undefined => (p === undefined ? undefined : readFileSync(path.resolve(dir, p), "utf8"));
  const doc = rec(parse(readFileSync(file, "utf8")));
  const name = context ?? str(doc["current-context"]);
  const ctx = entry(doc["contexts"], name, "context");
  if (!ctx) throw new Error(`${file}: no context ${JSON.stringify(name ?? "")}`);
  const cluster = entry(doc["clusters"], str(ctx["cluster"]), "cluster");
  const server = str(cluster?.["server"]);
  if (!cluster || !server) throw new Error(`${file}: context ${JSON.stringify(name)} names no cluster with a server`);
  const user = entry(doc["users"], str(ctx["user"]), "user") ?? {};
  const out: KubeconfigConnection = {
    server: server.replace(/\/+$/, ""),
    insecureSkipTlsVerify: cluster["insecure-skip-tls-verify"] === true,
    namespace: str(ctx["namespace"]) ?? "default",
  };
  const ext = (n: string): Raw | undefined => entry(cluster["extensions"], n, "extension");
  const grpcServer = str(ext(GRPC_EXTENSION)?.["server"]);
  if (grpcServer) out.grpcServer = grpcServer;
  const natsUrl = str(ext(EVENT_LOG_EXTENSION)?.["nats-url"]);
  const creds = str(ext(EVENT_LOG_EXTENSION)?.["credentials"]);
  if (natsUrl) out.eventLog = { natsUrl, ...(creds ? { credentialsFile: path.resolve(dir, creds) } : {}) };
  const ca = b64(cluster["certificate-authority-data"]) ?? read(str(cluster["certificate-authority"]));
  if (ca) out.ca = ca;
  const token = str(user["token"]) ?? read(str(user["tokenFile"]))?.trim();
  if (token) out.token = token;
  const cert = b64(user["client-certificate-data"]) ?? read(str(user["client-certificate"]));
  const key = b64(user["client-key-data"]) ?? read(str(user["client-key"]));
  if (cert && key) {
    out.cert = cert;
    out.key = key;
  }
  return out;
}
