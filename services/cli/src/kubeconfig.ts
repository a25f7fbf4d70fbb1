// kubeconfig files: where they are, what they say, and the connection they give.
import { existsSync, readFileSync } from "node:fs";
import path from "node:path";
import { parse } from "yaml";

export interface KubeCluster {
  server: string;
  certificateAuthorityData?: string;
  certificateAuthority?: string;
  insecureSkipTlsVerify?: boolean;
  /** The cluster's `extensions` (name → extension), kept as written; kubectl ignores them. */
  extensions?: Map<string, Raw>;
  /** The file the cluster was read from (relative paths in extensions resolve against it). */
  baseDir?: string;
}

/**
 * The cluster extension `choreo up` writes: where the event log is (NATS
 * url) and the read-only subscriber's credentials file, for `choreo events`.
 */
export const EVENT_LOG_EXTENSION = "events.choreo.dev";
/** The cluster extension naming the api's gRPC door (`server: grpcs://host:port`): @choreo/client's `connectClient({ kubeconfig, transport: "grpc" })` reads it. */
export const GRPC_EXTENSION = "grpc.choreo.dev";

/** Where a cluster's event log is (its kubeconfig extension {@link EVENT_LOG_EXTENSION}). */
export interface EventLogAccess {
  /** nats:// url (a comma-separated list for a NATS cluster). */
  natsUrl: string;
  /** `user:password` file of a read-only subscriber (absolute). */
  credentials?: string;
}

export interface KubeUser {
  token?: string;
  tokenFile?: string;
  clientCertificateData?: string;
  clientKeyData?: string;
}

export interface KubeContext {
  cluster: string;
  user: string;
  namespace?: string;
}

/** A parsed (possibly merged) kubeconfig. Relative file paths are resolved against the file that named them. */
export interface Kubeconfig {
  currentContext?: string;
  clusters: Map<string, KubeCluster>;
  users: Map<string, KubeUser>;
  contexts: Map<string, KubeContext>;
}

/** Everything needed to talk to one API server. */
export interface Connection {
  server: string;
  /** PEM of the CA to trust (instead of the system's). */
  ca?: string;
  insecure: boolean;
  token?: string;
  clientCert?: string;
  clientKey?: string;
  /** The namespace commands default to. */
  namespace: string;
  /** True when the namespace came from `-n` (not from the context). */
  namespaceExplicit: boolean;
}

/** Flags that override the kubeconfig. */
export interface ConnectionOverrides {
  kubeconfig?: string;
  context?: string;
  server?: string;
  token?: string;
  namespace?: string;
  insecureSkipTlsVerify?: boolean;
}

type Raw = Record<string, unknown>;

function rec(v: unknown): Raw {
  return v !== null && typeof v === "object" && !Array.isArray(v) ? (v as Raw) : {};
}

function optStr(v: unknown): string | undefined {
  return typeof v === "string" && v !== "" ? v : undefined;
}

function named(list: unknown, field: string): [string, Raw][] {
  if (!Array.isArray(list)) return [];
  return list
    .map(rec)
    .filter((e) => typeof e["name"] === "string")
    .map((e) => [e["name"] as string, rec(e[field])]);
}

function resolvePath(p: string | undefined, baseDir: string | undefined): string | undefined {
  return p === undefined || baseDir === undefined || path.isAbsolute(p) ? p : path.join(baseDir, p);
}

/** Parses kubeconfig YAML; `baseDir` resolves relative file references. */
export function parseKubeconfig(text: string, baseDir?: string): Kubeconfig {
  let doc: unknown;
  try {
    doc = parse(text);
  } catch (err) {
    throw new Error(`error loading config: ${(err as Error).message}`);
  }
  const raw = rec(doc);
  const config: Kubeconfig = { currentContext: optStr(raw["current-context"]), clusters: new Map(), users: new Map(), contexts: new Map() };
  for (const [name, c] of named(raw["clusters"], "cluster")) {
    config.clusters.set(name, {
      server: typeof c["server"] === "string" ? c["server"] : "",
      certificateAuthorityData: optStr(c["certificate-authority-data"]),
      certificateAuthority: resolvePath(optStr(c["certificate-authority"]), baseDir),
      insecureSkipTlsVerify: c["insecure-skip-tls-verify"] === true,
      extensions: new Map(named(c["extensions"], "extension")),
      ...(baseDir !== undefined ? { baseDir } : {}),
    });
  }
  for (const [name, u] of named(raw["users"], "user")) {
    config.users.set(name, {
      token: optStr(u["token"]),
      tokenFile: resolvePath(optStr(u["tokenFile"]), baseDir),
      clientCertificateData: optStr(u["client-certificate-data"]),
      clientKeyData: optStr(u["client-key-data"]),
    });
  }
  for (const [name, c] of named(raw["contexts"], "context")) {
    config.contexts.set(name, { cluster: optStr(c["cluster"]) ?? "", user: optStr(c["user"]) ?? "", namespace: optStr(c["namespace"]) });
  }
  return config;
}

/** Merges kubeconfigs like kubectl: the first file to set a value (or name an entry) wins. */
export function mergeKubeconfigs(configs: Kubeconfig[]): Kubeconfig {
  const out: Kubeconfig = { clusters: new Map(), users: new Map(), contexts: new Map() };
  for (const c of configs) {
    out.currentContext ??= c.currentContext;
    for (const key of ["clusters", "users", "contexts"] as const) {
      const into = out[key] as Map<string, unknown>;
      for (const [name, v] of c[key]) if (!into.has(name)) into.set(name, v);
    }
  }
  return out;
}

/** Where the kubeconfig comes from, in order: `--kubeconfig`, `KUBECONFIG` (a path list), `.choreo/kubeconfig` in the working directory, `~/.kube/config`. */
export function kubeconfigPaths(flag: string | undefined, env: Record<string, string | undefined>, cwd: string): string[] {
  if (flag) return [path.resolve(cwd, flag)];
  const list = (env["KUBECONFIG"] ?? "").split(path.delimiter).filter((p) => p !== "");
  if (list.length > 0) return list.map((p) => path.resolve(cwd, p)).filter((p) => existsSync(p));
  const local = path.join(cwd, ".choreo", "kubeconfig");
  if (existsSync(local)) return [local];
  const home = env["HOME"] ?? env["USERPROFILE"];
  const user = home ? path.join(home, ".kube", "config") : undefined;
  return user && existsSync(user) ? [user] : [];
}

/** Reads and merges the kubeconfig files (a missing `--kubeconfig` file is an error). */
export function loadKubeconfig(paths: string[]): Kubeconfig {
  return mergeKubeconfigs(
    paths.map((p) => {
      let text: string;
      try {
        text = readFileSync(p, "utf8");
      } catch {
        throw new Error(`stat ${p}: no such file or directory`);
      }
      return parseKubeconfig(text, path.dirname(p));
    }),
  );
}

function decode(b64: string | undefined): string | undefined {
  return b64 === undefined ? undefined : Buffer.from(b64, "base64").toString("utf8");
}

function readOptional(file: string | undefined): string | undefined {
  return file === undefined ? undefined : readFileSync(file, "utf8");
}

/** The connection of the current (or `--context`) context, with flag overrides applied. */
export function connectionFrom(config: Kubeconfig, o: ConnectionOverrides = {}): Connection {
  const contextName = o.context ?? config.currentContext;
  const context = contextName === undefined ? undefined : config.contexts.get(contextName);
  if (o.context !== undefined && context === undefined) throw new Error(`context was not found for specified context: ${o.context}`);
  const cluster = context ? config.clusters.get(context.cluster) : undefined;
  const user = context ? config.users.get(context.user) : undefined;
  const server = o.server ?? cluster?.server ?? "";
  if (server === "") {
    throw new Error(
      "no server found: set --server, or a kubeconfig (--kubeconfig, KUBECONFIG, .choreo/kubeconfig or ~/.kube/config); is the cluster up (choreo up)?",
    );
  }
  const conn: Connection = {
    server: server.replace(/\/+$/, ""),
    insecure: o.insecureSkipTlsVerify === true || cluster?.insecureSkipTlsVerify === true,
    namespace: o.namespace ?? context?.namespace ?? "default",
    namespaceExplicit: o.namespace !== undefined,
  };
  // A --server override keeps the kubeconfig's CA only when it names the same server.
  if (o.server === undefined || o.server === cluster?.server) {
    const ca = decode(cluster?.certificateAuthorityData) ?? readOptional(cluster?.certificateAuthority);
    if (ca !== undefined) conn.ca = ca;
  }
  const token = o.token ?? user?.token ?? readOptional(user?.tokenFile)?.trim();
  if (token) conn.token = token;
  const cert = decode(user?.clientCertificateData);
  const key = decode(user?.clientKeyData);
  if (cert && key) {
    conn.clientCert = cert;
    conn.clientKey = key;
  }
  return conn;
}

/**
 * The event log of the current (or `context`) context's cluster, from its
 * kubeconfig extension; undefined when the cluster has none (not a `choreo
 * up` cluster).
 */
export function eventLogFrom(config: Kubeconfig, context?: string): EventLogAccess | undefined {
  const ctx = config.contexts.get(context ?? config.currentContext ?? "");
  const ext = ctx ? config.clusters.get(ctx.cluster)?.extensions?.get(EVENT_LOG_EXTENSION) : undefined;
  const cluster = ctx ? config.clusters.get(ctx.cluster) : undefined;
  const url = optStr(ext?.["nats-url"]);
  if (!url) return undefined;
  const credentials = resolvePath(optStr(ext?.["credentials"]), cluster?.baseDir);
  return { natsUrl: url, ...(credentials ? { credentials } : {}) };
}

/** Resolves the connection from flags, environment and files. */
export function resolveConnection(o: ConnectionOverrides, env: Record<string, string | undefined>, cwd: string): Connection {
  const paths = kubeconfigPaths(o.kubeconfig, env, cwd);
  return connectionFrom(loadKubeconfig(paths), o);
}

/**
 * A kubeconfig of one cluster, one user and one context (what `choreo up`
 * writes for the admin and `choreo kubeconfig create` for a user). `auth`:
 * the user's fields (`token`, or `client-certificate-data` and `client-key-data`).
 */
export function renderKubeconfig(o: {
  server: string;
  caPem: string;
  user: string;
  auth: Record<string, string>;
  context: string;
  namespace: string;
  /** The cluster's event log (`choreo up`): a cluster extension kubectl keeps and ignores. */
  eventLog?: EventLogAccess;
  /** The api's gRPC door, `grpcs://host:port` (`choreo up`): another such extension. */
  grpcServer?: string;
}): string {
  const q = (s: string): string => (/^[A-Za-z0-9._-]+$/.test(s) ? s : JSON.stringify(s));
  const events = o.eventLog
    ? [
        `    - name: ${EVENT_LOG_EXTENSION}`,
        "      extension:",
        `        nats-url: ${JSON.stringify(o.eventLog.natsUrl)}`,
        ...(o.eventLog.credentials ? [`        credentials: ${JSON.stringify(o.eventLog.credentials)}`] : []),
      ]
    : [];
  const grpc = o.grpcServer ? [`    - name: ${GRPC_EXTENSION}`, "      extension:", `        server: ${JSON.stringify(o.grpcServer)}`] : [];
  const ext = events.length + grpc.length > 0 ? ["    extensions:", ...events, ...grpc] : [];
  return [
    "apiVersion: v1",
    "kind: Config",
    "clusters:",
    "- name: choreo",
    "  cluster:",
    `    server: ${o.server}`,
    `    certificate-authority-data: ${Buffer.from(o.caPem).toString("base64")}`,
    ...ext,
    "users:",
    `- name: ${q(o.user)}`,
    "  user:",
    ...Object.entries(o.auth).map(([k, v]) => `    ${k}: ${v}`),
    "contexts:",
    `- name: ${q(o.context)}`,
    "  context:",
    "    cluster: choreo",
    `    user: ${q(o.user)}`,
    `    namespace: ${q(o.namespace)}`,
    `current-context: ${q(o.context)}`,
    "",
  ].join("\n");
}
