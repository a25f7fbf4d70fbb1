// Joined nodes' tokens (`choreo-node.<node>.<secret>`) as credentials, on
// every api replica alike: the node credential Secrets of kube-system
// (credential-secret.ts) kept in memory from a list, then a watch from the
// list's revision through the api's own handlers (the watch cache), as the
// RBAC cache and the node graph are. A token is looked up by the node it
// names and its SHA-256 compared with the Secret's in constant time.
//
// A token this replica's cache does not accept (its watch has not yet seen
// a credential another replica just issued, or the cache has not listed
// yet) is checked against the store itself: one read of that node's Secret,
// at most once a second per node (a revoked token sent in a loop costs one
// read a second, not one per request); what the read finds is kept in the
// cache if it is newer than what the cache holds. A deleted or replaced
// Secret stops its token when the watch brings the change (the watch's
// delay); while the event log is away (`stale`), the cache lists again
// every second.
import { timingSafeEqual } from "node:crypto";
import { ApiError, failure, isNotFound, Reason, unwrap } from "@choreo/kit";
import type { Runnable } from "@choreo/kit/lifecycle";
import type { Secret } from "@choreo/kit/gen/choreo/core/v1/core";
import { nodeIdentity } from "@choreo/kit/secrets";
import type { ApiHandlers } from "../handlers/api-handlers.js";
import type { TokenAuthenticator } from "../auth/static-tokens.js";
import { AUTHENTICATED, type UserInfo } from "../auth/types.js";
import { ListWatchLoop, type ListWatchLoopOptions } from "../auth/list-watch-loop.js";
import {
  credentialSecretName,
  NODE_CREDENTIAL_NAMESPACE,
  NODE_CREDENTIAL_TYPE,
  nodeOfToken,
  readCredentialSecret,
  tokenDigest,
  type CredentialDefect,
} from "./credential-secret.js";

/** Why a node token was refused (for the log; the client sees 401). */
export type NodeCredentialRefusal = CredentialDefect | "no-secret" | "wrong-token" | "throttled";

export interface NodeCredentialsOptions extends ListWatchLoopOptions {
  handlers: Pick<ApiHandlers, "list" | "watch" | "get">;
  /** Least time between two store reads of one node's Secret for tokens the cache does not accept (default 1 s). */
  missIntervalMs?: number;
  onRefused?: (node: string, why: NodeCredentialRefusal) => void;
}

/** A Secret as the cache keeps it: its revision, and the node and digest when it is a credential (none: deleted or defective). */
interface Entry {
  rv: number;
  node?: string;
  digest?: Buffer;
}

/** The user of node `node`'s token. */
export function nodeUser(node: string): UserInfo {
  const id = nodeIdentity(node);
  return { name: id.user, uid: id.user, groups: [...id.groups, AUTHENTICATED], extra: {} };
}

/** Node credential Secrets, cached from list + watch, as a token authenticator. */
export class NodeCredentials extends ListWatchLoop implements TokenAuthenticator, Runnable {
  readonly name = "node-credentials";
  /** By Secret name. */
  private readonly entries = new Map<string, Entry>();
  /** When each Secret name was last read from the store for a token the cache did not accept. */
  private readonly misses = new Map<string, number>();
  /** Store reads for tokens the cache did not accept: for tests. */
  storeReads = 0;

  constructor(private readonly opts: NodeCredentialsOptions) {
    super(opts, "node credentials");
  }

  /** Whether node `node` has a credential Secret (as far as this replica knows). */
  hasCredential(node: string): boolean {
    return this.entries.get(credentialSecretName(node))?.digest !== undefined;
  }

  async authenticateToken(token: string): Promise<UserInfo | undefined> {
    const node = nodeOfToken(token);
    // Not this authenticator's form: another may know it.
    if (node === undefined) return undefined;
    const given = tokenDigest(token);
    const name = credentialSecretName(node);
    const cached = this.entries.get(name);
    if (cached?.digest && cached.node === node && timingSafeEqual(cached.digest, given)) return nodeUser(node);
    const refuse = (why: NodeCredentialRefusal): undefined => {
      this.opts.onRefused?.(node, why);
      return undefined;
    };
    const now = Date.now();
    const last = this.misses.get(name);
    if (last !== undefined && now - last < (this.opts.missIntervalMs ?? 1_000)) return refuse("throttled");
    // Bounded however many names are tried.
    if (this.misses.size >= 10_000) this.misses.clear();
    this.misses.set(name, now);
    this.storeReads++;
    let s: Secret;
    try {
      s = unwrap(await this.opts.handlers.get({ resource: "secrets", namespace: NODE_CREDENTIAL_NAMESPACE, name })) as Secret;
    } catch (err) {
      if (isNotFound(err)) return refuse("no-secret");
      throw err;
    }
    this.observe(s);
    const read = readCredentialSecret(s);
    if ("defect" in read) return refuse(read.defect);
    if (read.node !== node || !timingSafeEqual(read.digest, given)) return refuse("wrong-token");
    return nodeUser(node);
  }

  /** Keeps `s` unless the cache holds the same or a newer revision of its name (a write's result, a store read). */
  observe(s: Secret, revision?: number): void {
    const name = s.metadata?.name ?? "";
    const rv = revision || Number(s.metadata?.resourceVersion ?? 0);
    const had = this.entries.get(name);
    if (had && had.rv >= rv) return;
    this.entries.set(name, entryOf(s, rv));
  }

  private request() {
    return { resource: "secrets", namespace: NODE_CREDENTIAL_NAMESPACE, labelSelector: "", fieldSelector: `type=${NODE_CREDENTIAL_TYPE}` };
  }

  protected async list(): Promise<string> {
    const fresh = new Map<string, Entry>();
    let cont = "";
    let revision = "";
    do {
      const page = await this.opts.handlers.list({ ...this.request(), limit: 5_000, continue: cont });
      for (const o of page.items) {
        if (o.kind?.$case !== "secret") continue;
        const s = o.kind.value;
        fresh.set(s.metadata?.name ?? "", entryOf(s, Number(s.metadata?.resourceVersion ?? 0)));
      }
      cont = page.metadata?.continue ?? "";
      if (!revision) revision = page.metadata?.resourceVersion ?? "";
    } while (cont);
    // What was observed after the list's revision (a write's result, a store read) is newer than the list: kept.
    const at = Number(revision || 0);
    for (const [name, e] of this.entries) if (e.rv > at && (fresh.get(name)?.rv ?? 0) < e.rv) fresh.set(name, e);
    this.entries.clear();
    for (const [name, e] of fresh) this.entries.set(name, e);
    this.opts.log.info({ credentials: [...fresh.values()].filter((e) => e.digest).length, revision }, "node credentials listed");
    return revision;
  }

  /** Applies changes after `revision` until the watch ends; the last revision seen. Throws on an ERROR event. */
  protected async watch(revision: string, signal: AbortSignal): Promise<string> {
    const req = { ...this.request(), resourceVersion: revision, timeoutSeconds: 0, allowBookmarks: true };
    for await (const ev of this.opts.handlers.watch(req, signal)) {
      if (ev.type === "ERROR") throw new ApiError(ev.status ?? failure(500, Reason.InternalError, "watch error"));
      if (ev.revision) revision = String(ev.revision);
      if (ev.object?.kind?.$case !== "secret") continue;
      const s = ev.object.kind.value;
      const rv = ev.revision || Number(s.metadata?.resourceVersion ?? 0);
      if (ev.type === "ADDED" || ev.type === "MODIFIED") this.observe(s, rv);
      else if (ev.type === "DELETED") {
        // A tombstone: a store read of the Secret from before its deletion, answered late, cannot bring it back.
        const name = s.metadata?.name ?? "";
        if ((this.entries.get(name)?.rv ?? 0) < rv) this.entries.set(name, { rv });
      }
    }
    return revision;
  }
}

function entryOf(s: Secret, rv: number): Entry {
  const read = readCredentialSecret(s);
  return "defect" in read ? { rv } : { rv, node: read.node, digest: read.digest };
}

/**
 * The token file's authenticator, except a `system:node:<n>` line of a node
 * that has a credential Secret: a node that joined before credentials were
 * kept in the cluster (its token a line of a replica's file) and joined
 * again since is known only by its new token, on every replica, even where
 * the issuing replica could not remove the old line (another's file).
 */
export function supersedingNodeLines(tokens: TokenAuthenticator, credentials: Pick<NodeCredentials, "hasCredential">): TokenAuthenticator {
  const prefix = "system:node:";
  return {
    async authenticateToken(token, audiences) {
      const user = await tokens.authenticateToken(token, audiences);
      if (user?.name.startsWith(prefix) && credentials.hasCredential(user.name.slice(prefix.length))) return undefined;
      return user;
    },
  };
}
