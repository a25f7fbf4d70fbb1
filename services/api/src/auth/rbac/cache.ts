// The RBAC objects the authorizer reads, kept in memory from the api's own
// handlers: for each of roles, clusterroles, rolebindings and
// clusterrolebindings a list, then a watch from the list's revision; a
// watch that ends is resumed from the last revision seen, one that fails
// (410 Expired, an ERROR event, any error) relists after a short backoff.
// While the event log the watches read is away (nats-server down) the store
// still takes writes the watches cannot show: the cache then relists every
// second (`stale`), so a binding deleted meanwhile stops allowing.
import { isExpired, keyOf, type AnyObject } from "@choreo/kit";
import { sleep } from "@choreo/kit/lifecycle";
import type { Logger } from "@choreo/kit/log";
import type { Object as ApiObject } from "@choreo/kit/gen/choreo/api/v1/api";
import type { ApiHandlers } from "../../handlers/api-handlers.js";
import type { ClusterRole, ClusterRoleBinding, RbacSource, Role, RoleBinding } from "./types.js";

type Resource = "roles" | "clusterroles" | "rolebindings" | "clusterrolebindings";
const RESOURCES: Resource[] = ["roles", "clusterroles", "rolebindings", "clusterrolebindings"];
const CASES: Record<Resource, string> = { roles: "role", clusterroles: "clusterRole", rolebindings: "roleBinding", clusterrolebindings: "clusterRoleBinding" };

/** Objects of one resource by `ns/name` (or `name`), and namespaced ones by namespace. */
class Store<T extends { metadata?: { name?: string; namespace?: string } | undefined }> {
  readonly byKey = new Map<string, T>();
  readonly byNamespace = new Map<string, Map<string, T>>();

  put(o: T): void {
    const ns = o.metadata?.namespace ?? "";
    const name = o.metadata?.name ?? "";
    this.byKey.set(keyOf({ namespace: ns, name }), o);
    let m = this.byNamespace.get(ns);
    if (!m) this.byNamespace.set(ns, (m = new Map()));
    m.set(name, o);
  }

  remove(o: T): void {
    const ns = o.metadata?.namespace ?? "";
    const name = o.metadata?.name ?? "";
    this.byKey.delete(keyOf({ namespace: ns, name }));
    const m = this.byNamespace.get(ns);
    m?.delete(name);
    if (m?.size === 0) this.byNamespace.delete(ns);
  }

  replace(all: T[]): void {
    this.byKey.clear();
    this.byNamespace.clear();
    for (const o of all) this.put(o);
  }
}

export interface RbacCacheOptions {
  handlers: Pick<ApiHandlers, "list" | "watch">;
  log: Logger;
  /** Backoff before a relist after a failure (doubles up to 5 s). */
  retryMs?: number;
  /** True while the watches may lag the store (the event log is away): every `stalePollMs` (default 1 s) each resource relists. */
  stale?: () => boolean;
  stalePollMs?: number;
}

export class RbacCache implements RbacSource {
  private readonly roles = new Store<Role>();
  private readonly clusterRoles = new Store<ClusterRole>();
  private readonly bindings = new Store<RoleBinding>();
  private readonly clusterBindings = new Store<ClusterRoleBinding>();
  /** Versions are values of one counter: a scope's is that of its last change (or of the last relist). */
  private counter = 0;
  private clusterVersion = 0;
  private readonly namespaceVersions = new Map<string, number>();
  private bindingsRelisted = 0;
  /** Bumped on every change of any of the four resources (the authorizer's decision cache). */
  private changes = 0;
  private readonly listed = new Set<Resource>();
  private syncWaiters: (() => void)[] = [];
  private readonly abort = new AbortController();
  private loops: Promise<void>[] = [];
  /** Each resource's running watch, aborted by `relistAll`. */
  private readonly watches = new Map<Resource, AbortController>();
  private readonly relistWanted = new Set<Resource>();
  /** Lists made (4 at the start, then one per relist): for tests and logs. */
  lists = 0;

  constructor(private readonly opts: RbacCacheOptions) {}

  /** Starts the four list/watch loops; they run until `stop()`. */
  start(): void {
    if (this.loops.length) return;
    this.loops = RESOURCES.map((r) => this.run(r));
    if (this.opts.stale) this.loops.push(this.pollWhileStale(this.opts.stale));
  }

  /** Each resource lists again now and watches from that list (its running watch ended): the watches may have missed changes. */
  relistAll(): void {
    for (const r of RESOURCES) {
      this.relistWanted.add(r);
      this.watches.get(r)?.abort();
    }
  }

  private async pollWhileStale(stale: () => boolean): Promise<void> {
    const signal = this.abort.signal;
    while (!signal.aborted) {
      await sleep(this.opts.stalePollMs ?? 1_000, signal).catch(() => undefined);
      if (!signal.aborted && stale()) this.relistAll();
    }
  }

  async stop(): Promise<void> {
    this.abort.abort();
    await Promise.all(this.loops);
  }

  /** True once each of the four resources has been listed. */
  synced(): boolean {
    return this.listed.size === RESOURCES.length;
  }

  waitSynced(signal?: AbortSignal): Promise<void> {
    if (this.synced()) return Promise.resolve();
    return new Promise((resolve, reject) => {
      this.syncWaiters.push(resolve);
      signal?.addEventListener("abort", () => reject(new Error("aborted before the RBAC cache synced")), { once: true });
    });
  }

  getRole(namespace: string, name: string): Role | undefined {
    return this.roles.byNamespace.get(namespace)?.get(name);
  }

  getClusterRole(name: string): ClusterRole | undefined {
    return this.clusterRoles.byKey.get(name);
  }

  roleBindings(namespace: string): Iterable<RoleBinding> {
    return this.bindings.byNamespace.get(namespace)?.values() ?? [];
  }

  clusterRoleBindings(): Iterable<ClusterRoleBinding> {
    return this.clusterBindings.byKey.values();
  }

  version(scope: string): number {
    if (scope === "") return this.clusterVersion;
    return Math.max(this.namespaceVersions.get(scope) ?? 0, this.bindingsRelisted);
  }

  generation(): number {
    return this.changes;
  }

  private store(r: Resource): Store<Role | RoleBinding> {
    switch (r) {
      case "roles":
        return this.roles;
      case "clusterroles":
        return this.clusterRoles;
      case "rolebindings":
        return this.bindings;
      case "clusterrolebindings":
        return this.clusterBindings;
    }
  }

  /** An object of `r` in `namespace` changed (all of them: undefined). Called once the store holds the change. */
  private changed(r: Resource, namespace?: string): void {
    this.changes++;
    if (r === "clusterrolebindings") this.clusterVersion = ++this.counter;
    else if (r === "rolebindings" && namespace === undefined) {
      this.bindingsRelisted = ++this.counter;
      this.namespaceVersions.clear();
    } else if (r === "rolebindings") this.namespaceVersions.set(namespace ?? "", ++this.counter);
  }

  private async run(resource: Resource): Promise<void> {
    const signal = this.abort.signal;
    const base = this.opts.retryMs ?? 200;
    let failures = 0;
    let revision = "";
    while (!signal.aborted) {
      const watch = new AbortController();
      const stop = (): void => watch.abort();
      signal.addEventListener("abort", stop, { once: true });
      try {
        // A relist asked for while listing asks for another: that list may have been read before the change.
        while (!revision || this.relistWanted.delete(resource)) revision = await this.relist(resource);
        this.watches.set(resource, watch);
        if (this.relistWanted.has(resource)) continue;
        revision = await this.watch(resource, revision, watch.signal);
        failures = 0;
      } catch (err) {
        if (signal.aborted) break;
        if (watch.signal.aborted && this.relistWanted.has(resource)) continue;
        revision = "";
        failures++;
        if (isExpired(err)) this.opts.log.info({ resource }, "rbac cache revision expired; relisting");
        else this.opts.log.warn({ err, resource, failures }, "rbac cache list/watch failed; relisting");
        await sleep(Math.min(5_000, base * 2 ** (failures - 1)), signal);
      } finally {
        signal.removeEventListener("abort", stop);
        if (this.watches.get(resource) === watch) this.watches.delete(resource);
      }
    }
  }

  private async relist(resource: Resource): Promise<string> {
    const items: (Role | RoleBinding)[] = [];
    let cont = "";
    let revision = "";
    do {
      const page = await this.opts.handlers.list({ resource, namespace: "", labelSelector: "", fieldSelector: "", limit: 5_000, continue: cont });
      for (const o of page.items) {
        const v = valueOf(resource, o);
        if (v) items.push(v);
      }
      cont = page.metadata?.continue ?? "";
      if (!revision) revision = page.metadata?.resourceVersion ?? "";
    } while (cont);
    this.lists++;
    this.store(resource).replace(items);
    this.changed(resource);
    this.opts.log.debug({ resource, count: items.length, revision }, "rbac cache listed");
    if (!this.listed.has(resource)) {
      this.listed.add(resource);
      if (this.synced()) for (const w of this.syncWaiters.splice(0)) w();
    }
    return revision;
  }

  /** Applies changes after `revision` until the watch ends; returns the last revision seen. Throws on an ERROR event. */
  private async watch(resource: Resource, revision: string, signal: AbortSignal): Promise<string> {
    const req = { resource, namespace: "", labelSelector: "", fieldSelector: "", resourceVersion: revision, timeoutSeconds: 0, allowBookmarks: true };
    for await (const ev of this.opts.handlers.watch(req, signal)) {
      if (ev.type === "ERROR") throw new WatchError(ev.status?.message ?? "watch error", ev.status?.code ?? 0);
      if (ev.revision) revision = String(ev.revision);
      const v = ev.object ? valueOf(resource, ev.object) : undefined;
      if (!v) continue;
      if (ev.type === "ADDED" || ev.type === "MODIFIED") this.store(resource).put(v);
      else if (ev.type === "DELETED") this.store(resource).remove(v);
      else continue;
      this.changed(resource, v.metadata?.namespace ?? "");
    }
    return revision;
  }
}

class WatchError extends Error {
  constructor(
    message: string,
    readonly code: number,
  ) {
    super(message);
  }
}

function valueOf(resource: Resource, o: ApiObject): (Role | RoleBinding) | undefined {
  const k = o.kind;
  if (!k || k.$case !== CASES[resource]) return undefined;
  // The case was checked above: the value is the generated Role, ClusterRole, RoleBinding or ClusterRoleBinding.
  return k.value as AnyObject as unknown as Role | RoleBinding;
}
