import { randomBytes } from "node:crypto";
import { chmodSync, closeSync, fstatSync, openSync, readFileSync, renameSync, statSync, writeSync } from "node:fs";
import path from "node:path";

/**
 * Secrets on disk: random passwords, files only their owner may read (0600),
 * and the `user:password` credentials files the services read. Whoever
 * starts a server writes its config and the clients' credentials; a client
 * gets the file's path by environment (CHOREO_NATS_CREDENTIALS,
 * CHOREO_REDIS_CREDENTIALS), never the secret itself on a command line.
 */

/** A user name and its password. */
export interface Credentials {
  user: string;
  password: string;
}

/** A random secret of `bytes` bytes, hex (safe in URLs and in nats/redis config files). */
export function randomSecret(bytes = 24): string {
  return randomBytes(bytes).toString("hex");
}

/**
 * Writes `content` to `file` readable by its owner alone (0600), atomically:
 * a temporary file made 0600 before anything is written, then renamed.
 */
export function writeSecretFile(file: string, content: string): void {
  const tmp = path.join(path.dirname(file), `.${path.basename(file)}.${process.pid}.tmp`);
  const fd = openSync(tmp, "w", 0o600);
  try {
    // openSync's mode applies only to a new file (and through the umask): make sure.
    chmodSync(tmp, 0o600);
    writeSync(fd, content);
  } finally {
    closeSync(fd);
  }
  renameSync(tmp, file);
}

/** Reads a secret file; refuses one that its group or others may read or write (like ssh). */
export function readSecretFile(file: string): string {
  const fd = openSync(file, "r");
  try {
    const mode = fstatSync(fd).mode & 0o777;
    if (mode & 0o077) throw new Error(`${file} is readable by others (mode ${mode.toString(8).padStart(4, "0")}); chmod 600 it`);
    return readFileSync(fd, "utf8");
  } finally {
    closeSync(fd);
  }
}

/** The permission bits of a file (0o600 …). */
export function fileMode(file: string): number {
  return statSync(file).mode & 0o777;
}

/** Writes a credentials file: one line `user:password`, mode 0600. */
export function writeCredentials(file: string, c: Credentials): void {
  if (!c.user || c.user.includes(":") || /\s/.test(c.user)) throw new Error(`bad user name ${JSON.stringify(c.user)}`);
  writeSecretFile(file, `${c.user}:${c.password}\n`);
}

/** Reads a credentials file (`user:password`, mode 0600). */
export function readCredentials(file: string): Credentials {
  const line =
    readSecretFile(file)
      .split("\n")
      .find((l) => l.trim() !== "" && !l.startsWith("#"))
      ?.trim() ?? "";
  const at = line.indexOf(":");
  if (at <= 0 || at === line.length - 1) throw new Error(`${file}: expected one line user:password`);
  return { user: line.slice(0, at), password: line.slice(at + 1) };
}

/**
 * The URLs of a comma-separated list (a NATS cluster's members:
 * `nats://a:4222,nats://b:4222`); one URL alone is a list of one.
 */
export function urlList(url: string): string[] {
  return url
    .split(",")
    .map((x) => x.trim())
    .filter((x) => x !== "");
}

/** Whether `url` is a list of whole URLs (each with its scheme), not one URL (a `redis+sentinel://h:p,h:p/name` is one). */
function isUrlList(url: string): boolean {
  return url.includes(",") && urlList(url).every((x) => x.includes("://"));
}

/** The credentials in a URL's userinfo (decoded), if any; of a list, the first member's that has some. */
export function urlCredentials(url: string): Credentials | undefined {
  if (isUrlList(url)) return urlList(url).map(urlCredentials).find(Boolean);
  if (!url.includes("://")) return undefined;
  const u = new URL(url);
  if (!u.username && !u.password) return undefined;
  return { user: decodeURIComponent(u.username), password: decodeURIComponent(u.password) };
}

/** The URL without its userinfo (each of a list's). */
export function stripCredentials(url: string): string {
  if (isUrlList(url)) return urlList(url).map(stripCredentials).join(",");
  const u = new URL(url);
  u.username = "";
  u.password = "";
  return u.toString().replace(/\/$/, "");
}

/** The URL with `c` as its userinfo (each of a list's). */
export function withCredentials(url: string, c: Credentials): string {
  if (isUrlList(url))
    return urlList(url)
      .map((x) => withCredentials(x, c))
      .join(",");
  const u = new URL(url);
  u.username = encodeURIComponent(c.user);
  u.password = encodeURIComponent(c.password);
  return u.toString().replace(/\/$/, "");
}

/** The URL with its password replaced by `***` (for logs and messages; each of a list's). Not a URL: returned as is. */
export function redactUrl(url: string): string {
  if (isUrlList(url)) return urlList(url).map(redactUrl).join(",");
  try {
    const u = new URL(url);
    if (!u.password) return url;
    u.password = "***";
    return u.toString().replace(/\/$/, "");
  } catch {
    return url;
  }
}

/**
 * The credentials a client uses: the URL's userinfo, else the credentials
 * file (a path, typically from CHOREO_NATS_CREDENTIALS or
 * CHOREO_REDIS_CREDENTIALS), else none (the server then refuses it).
 */
export function clientCredentials(url: string, credentialsFile?: string): Credentials | undefined {
  return urlCredentials(url) ?? (credentialsFile ? readCredentials(credentialsFile) : undefined);
}

/**
 * What nats.js 3 needs: it ignores a URL's userinfo, so the server list goes
 * without it and user/pass as options. With `caFile` (CHOREO_NATS_CA) the
 * client speaks TLS only and verifies the server's certificate against that
 * CA: a server without TLS, or with a certificate another CA signed, is refused.
 */
export function natsConnectOptions(
  url: string,
  credentialsFile?: string,
  caFile?: string,
): { servers: string | string[]; user?: string; pass?: string; inboxPrefix?: string; tls?: { caFile: string } } {
  const c = clientCredentials(url, credentialsFile);
  const tls = caFile ? { tls: { caFile } } : {};
  // A NATS cluster's members (`nats://a:4222,nats://b:4222`): nats.js takes them as a list and reconnects to any.
  if (isUrlList(url)) {
    const servers = urlList(stripCredentials(url));
    return c ? { servers, user: c.user, pass: c.password, inboxPrefix: inboxPrefixOf(c.user), ...tls } : { servers, ...tls };
  }
  // The user's own inboxes: the only ones nats-server lets a restricted user subscribe to (withOwnInboxes).
  return c ? { servers: stripCredentials(url), user: c.user, pass: c.password, inboxPrefix: inboxPrefixOf(c.user), ...tls } : { servers: url, ...tls };
}

/** The Redis URL ioredis connects to: with the credentials file's user and password when the URL has none. */
export function redisConnectUrl(url: string, credentialsFile?: string): string {
  const c = clientCredentials(url, credentialsFile);
  return c ? withCredentials(url, c) : url;
}

function quoted(s: string): string {
  if (!/^[A-Za-z0-9_.-]+$/.test(s)) throw new Error(`refusing to put ${JSON.stringify(s)} in a server config (letters, digits, _ . - only)`);
  return `"${s}"`;
}

/** What a NATS user may publish and subscribe to (nats-server's `permissions`); absent: everything. */
export interface NatsPermissions {
  publish: { allow: string[]; deny?: string[] };
  subscribe: { allow: string[]; deny?: string[] };
  /** Lets the user answer a request it received (once, to its reply subject) without publish rights there. */
  allowResponses?: boolean;
}

/** A NATS user: credentials and, unless it may do everything (the api), its permissions. */
export interface NatsUser extends Credentials {
  permissions?: NatsPermissions;
}

function subjects(list: string[]): string {
  for (const x of list) if (!/^[A-Za-z0-9_$.*>~-]+$/.test(x)) throw new Error(`refusing subject ${JSON.stringify(x)} in a server config`);
  return `[${list.map((x) => `"${x}"`).join(", ")}]`;
}

/** The NATS user the api (and only it) connects as: unrestricted. */
export const API_NATS_USER = "choreo";

/**
 * A NATS user's inbox prefix: its request replies, JetStream pulls and bus
 * streams arrive under `_INBOX_<user>.` (the name as one subject token), set
 * by {@link natsConnectOptions} as nats.js's `inboxPrefix`; nats-server lets
 * each restricted user subscribe under its own prefix only, so no one hears
 * another's replies or pulled events.
 */
export function inboxPrefixOf(user: string): string {
  return `_INBOX_${user.replace(/[^A-Za-z0-9_-]/g, "~")}`;
}

/** What nats-users.ts writes for "inboxes" (`_INBOX.>`), rendered per user. */
const ANY_INBOX = "_INBOX.>";

/**
 * A user's permissions with `_INBOX.>` made specific: it subscribes under its
 * own prefix only, and publishes only into the api's inboxes (a node agent
 * sends a bus stream's frames to the api's end of it; answering a request
 * goes through allow_responses).
 */
export function withOwnInboxes(user: string, p: NatsPermissions): NatsPermissions {
  const pub = (x: string) => (x === ANY_INBOX ? `${inboxPrefixOf(API_NATS_USER)}.>` : x);
  const sub = (x: string) => (x === ANY_INBOX ? `${inboxPrefixOf(user)}.>` : x);
  return { ...p, publish: { ...p.publish, allow: p.publish.allow.map(pub) }, subscribe: { ...p.subscribe, allow: p.subscribe.allow.map(sub) } };
}

function permissionsBlock(p: NatsPermissions): string {
  const side = (name: string, v: { allow: string[]; deny?: string[] }): string =>
    `${name}: { allow: ${subjects(v.allow)}${v.deny?.length ? `, deny: ${subjects(v.deny)}` : ""} }`;
  return `, permissions: { ${side("publish", p.publish)}, ${side("subscribe", p.subscribe)}${p.allowResponses ? ", allow_responses: true" : ""} }`;
}

/**
 * The `authorization` block of a nats-server config: these users and no
 * one else (no `no_auth_user`: an anonymous client is refused). A user
 * without permissions may publish and subscribe to everything (the api);
 * the others what their permissions allow (see nats-users.ts).
 */
export function natsAuthorization(users: NatsUser[]): string {
  if (users.length === 0) throw new Error("nats-server needs at least one user");
  return [
    "authorization {",
    "  users = [",
    ...users.map(
      (u) => `    { user: ${quoted(u.user)}, password: ${quoted(u.password)}${u.permissions ? permissionsBlock(withOwnInboxes(u.user, u.permissions)) : ""} }`,
    ),
    "  ]",
    "}",
    "",
  ].join("\n");
}

/**
 * Redis ACL lines: `default` off and without any password (an anonymous
 * client gets NOAUTH, `AUTH default …` WRONGPASS) and each user with all
 * keys, channels and commands. `default` keeps its permissions although no
 * one can log in as it: Redis 7.0 replays the AOF as `default` and re-checks
 * its permissions at each EXEC, so a `default` without commands silently
 * drops every MULTI/EXEC write on restart (redis/redis#14541, fixed after 7.0).
 */
export function redisAcl(users: Credentials[]): string {
  return [
    "user default off resetpass ~* &* +@all",
    ...users.map((u) => `user ${quoted(u.user).slice(1, -1)} on >${quoted(u.password).slice(1, -1)} ~* &* +@all`),
    "",
  ].join("\n");
}
