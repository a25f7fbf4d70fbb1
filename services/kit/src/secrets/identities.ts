import { randomBytes } from "node:crypto";
import { appendFileSync, existsSync, mkdirSync, readFileSync } from "node:fs";
import path from "node:path";
import { readSecretFile, writeSecretFile } from "./secrets.js";

/**
 * The actors' identities: each actor process proves who it is to the api
 * with its own bearer token (a line of the api's token file, Kubernetes'
 * `token,user,uid,"groups"` form), read from a 0600 file whose path it gets
 * in CHOREO_API_TOKEN_FILE — never the token on a command line. Whoever
 * starts a cluster (the test harness, `choreo up`, compose's `secrets`
 * service) provisions both: the api's line and the actor's file.
 */

/** Who an actor is to the api's authenticator and RBAC. */
export interface Identity {
  user: string;
  groups: string[];
}

/** The group every node agent's user is in (Kubernetes' Node authorizer keys on it). */
export const NODES_GROUP = "system:nodes";

/** The identity of the scheduler, replication and endpoints actors (the users the default RBAC policy binds). */
export const ACTOR_IDENTITIES: Readonly<Record<"scheduler" | "replication" | "endpoints", Identity>> = {
  scheduler: { user: "system:kube-scheduler", groups: [] },
  replication: { user: "system:kube-controller-manager", groups: [] },
  endpoints: { user: "system:choreo-endpoints", groups: [] },
};

/** A node agent running one node: `system:node:<node>` in `system:nodes`. */
export function nodeIdentity(node: string): Identity {
  return { user: `system:node:${node}`, groups: [NODES_GROUP] };
}

/** The group of hollow-nodes processes (the api's RBAC grants it what the node authorizer grants a real node per pod). */
export const HOLLOW_NODES_GROUP = "system:hollow-nodes";

/**
 * A hollow-nodes process (many simulated nodes in one process, one
 * connection): one identity in `system:nodes` that is no single node's, so
 * a per-node authorizer cannot narrow it to one node; `system:hollow-nodes`
 * too, whose role grants what its pods use.
 */
export function hollowNodesIdentity(prefix: string): Identity {
  return { user: `system:hollow-nodes:${prefix.replace(/[^A-Za-z0-9_.-]/g, "") || "hollow"}`, groups: [NODES_GROUP, HOLLOW_NODES_GROUP] };
}

/** The identity of an actor started by name (`scheduler`, `replication`, `endpoints`), undefined for another name. */
export function actorIdentity(name: string): Identity | undefined {
  return (ACTOR_IDENTITIES as Record<string, Identity>)[name];
}

/** The environment variable naming an actor's token file. */
export const API_TOKEN_FILE_ENV = "CHOREO_API_TOKEN_FILE";

function checkName(s: string, what: string): void {
  if (!s || /[",\n\r]/.test(s)) throw new Error(`bad ${what} ${JSON.stringify(s)} for a token file line`);
}

/** The token file line of `token` for `id` (`token,user,uid,"groups"`). */
export function tokenLine(token: string, id: Identity): string {
  checkName(id.user, "user");
  for (const g of id.groups) checkName(g, "group");
  return `${token},${id.user},${id.user},"${id.groups.join(",")}"`;
}

/**
 * The api's token file at `file`: made (0600, its directory 0700) with one
 * random bare token, the cluster administrator's, when missing. Returns
 * the first line's token (the administrator's).
 */
export function ensureTokenFile(file: string): string {
  if (!existsSync(file)) {
    mkdirSync(path.dirname(file), { recursive: true, mode: 0o700 });
    writeSecretFile(file, `${randomBytes(24).toString("base64url")}\n`);
  }
  const first = readFileSync(file, "utf8")
    .split("\n")
    .map((l) => l.trim())
    .find((l) => l && !l.startsWith("#"));
  return (first ?? "").split(",")[0] ?? "";
}

/**
 * Provisions `id`: its token in `tokenFile` (0600, `token` alone) and a line
 * for it in the api's `apiTokenFile`. Idempotent: a token file already
 * there is kept, and its line is appended only when the api's file lacks
 * it (replaced when the file has the token with other groups). The api re-reads its token file when it changes, so an actor
 * provisioned while the api runs is known to it.
 */
export function provisionIdentity(apiTokenFile: string, tokenFile: string, id: Identity): string {
  ensureTokenFile(apiTokenFile);
  let token: string;
  if (existsSync(tokenFile)) token = readTokenFile(tokenFile);
  else {
    mkdirSync(path.dirname(tokenFile), { recursive: true, mode: 0o700 });
    token = randomBytes(24).toString("base64url");
    writeSecretFile(tokenFile, `${token}\n`);
  }
  const line = tokenLine(token, id);
  const lines = readFileSync(apiTokenFile, "utf8").split("\n");
  if (lines.some((l) => l.trim() === line)) return token;
  // The token's line with other groups (an identity whose groups changed): replaced, never a second line (a duplicate token).
  const stale = (l: string): boolean => l.trim().startsWith(`${token},`);
  if (lines.some(stale)) writeSecretFile(apiTokenFile, lines.map((l) => (stale(l) ? line : l)).join("\n"));
  else appendFileSync(apiTokenFile, `${line}\n`);
  return token;
}

/** Reads an actor's token file (mode 0600, the token on its first line). */
export function readTokenFile(file: string): string {
  const token = readSecretFile(file)
    .split("\n")
    .map((l) => l.trim())
    .find((l) => l && !l.startsWith("#"));
  if (!token) throw new Error(`${file} holds no token`);
  return token;
}

/** The token an actor presents: the file named by CHOREO_API_TOKEN_FILE, else none (the api then answers 401). */
export function actorToken(env: NodeJS.ProcessEnv = process.env): string | undefined {
  const file = env[API_TOKEN_FILE_ENV];
  return file ? readTokenFile(file) : undefined;
}
