// The event stream's data flow: one Kubernetes watch per chosen kind, all
// from the same starting revision, merged into a ChangeLog (ordered by
// resourceVersion — revisions are cluster-wide). Each watch resumes from
// the last revision it delivered after a broken stream (the api killed and
// restarted: no gap, no duplicate); 403 stops that kind with a notice,
// 410 (its revisions no longer kept) continues from now with a gap notice.
import { ApiError, apiFetch, collectionPath, getJson, lines } from "./api.js";
import { ChangeLog, type Verb } from "./changes.js";

/** A kind the page can follow. */
export interface StreamKind {
  resource: string;
  kind: string;
  groupVersion: string;
  /** Cluster-scoped kinds (nodes, namespaces) are watched whole even in a namespace-scoped stream. */
  clusterScoped?: boolean;
}

/** What the page can follow (each a watch of every namespace). */
export const STREAM_KINDS: StreamKind[] = [
  { resource: "pods", kind: "Pod", groupVersion: "v1" },
  { resource: "nodes", kind: "Node", groupVersion: "v1", clusterScoped: true },
  { resource: "deployments", kind: "Deployment", groupVersion: "apps/v1" },
  { resource: "replicasets", kind: "ReplicaSet", groupVersion: "apps/v1" },
  { resource: "services", kind: "Service", groupVersion: "v1" },
  { resource: "endpoints", kind: "Endpoints", groupVersion: "v1" },
  { resource: "replicationcontrollers", kind: "ReplicationController", groupVersion: "v1" },
  { resource: "daemonsets", kind: "DaemonSet", groupVersion: "apps/v1" },
  { resource: "jobs", kind: "Job", groupVersion: "batch/v1" },
  { resource: "cronjobs", kind: "CronJob", groupVersion: "batch/v1" },
  { resource: "configmaps", kind: "ConfigMap", groupVersion: "v1" },
  { resource: "namespaces", kind: "Namespace", groupVersion: "v1", clusterScoped: true },
  { resource: "serviceaccounts", kind: "ServiceAccount", groupVersion: "v1" },
  { resource: "events", kind: "Event", groupVersion: "v1" },
  { resource: "leases", kind: "Lease", groupVersion: "coordination.k8s.io/v1" },
];

export const DEFAULT_KINDS = ["pods", "nodes", "deployments", "replicasets", "services"];

/**
 * Watches at once: a browser keeps at most 6 HTTP/1.1 connections to one
 * host, and every open watch holds one; one stays free for other calls.
 */
export const MAX_WATCHES = 5;

export type KindState =
  | { state: "starting" }
  | { state: "live" }
  | { state: "retrying"; message: string }
  | { state: "forbidden"; message: string }
  | { state: "failed"; message: string };

/** A notice in the stream: a gap (410) a kind's watch could not fill. */
export interface Gap {
  resource: string;
  from: number;
  to: number;
}

const sleep = (ms: number, signal: AbortSignal) =>
  new Promise<void>((resolve) => {
    const t = setTimeout(resolve, ms);
    signal.addEventListener("abort", () => (clearTimeout(t), resolve()), { once: true });
  });

const message = (err: unknown) => (err instanceof Error ? err.message : String(err));

/**
 * The stream's state: the log, each kind's watch state and last revision,
 * a listener told at most once per animation frame.
 */
export class EventStream {
  readonly log = new ChangeLog();
  readonly states = new Map<string, KindState>();
  /** Per kind: the last revision its watch delivered (where it resumes). */
  readonly lastRevision = new Map<string, number>();
  readonly gaps: Gap[] = [];
  /** The revision the page started after (`since`, or the current one when opened). */
  start: number | undefined;
  startError: string | undefined;
  version = 0;
  private frame = 0;
  private listener: (() => void) | undefined;
  private starting: Promise<number> | undefined;

  /**
   * `namespace`: watch namespaced kinds in that namespace only (for a user
   * who may not watch them across namespaces); "" every namespace.
   */
  constructor(
    since: number | undefined,
    readonly namespace = "",
  ) {
    this.start = since;
  }

  /** The collection a kind is watched (and listed) at. */
  private pathOf(k: StreamKind): string {
    return collectionPath(k.groupVersion, k.resource, k.clusterScoped ? "" : this.namespace);
  }

  onChange(fn: (() => void) | undefined): void {
    this.listener = fn;
  }

  changed(): void {
    this.version++;
    if (this.frame) return;
    this.frame = requestAnimationFrame(() => {
      this.frame = 0;
      this.listener?.();
    });
  }

  /** The starting revision: `since`, else the current one (a list of one object of the first kind that answers). */
  private startRevision(kinds: StreamKind[], signal: AbortSignal): Promise<number> {
    if (this.start !== undefined) return Promise.resolve(this.start);
    this.starting ??= (async () => {
      let last: unknown;
      for (const k of kinds) {
        try {
          const list = await getJson<{ metadata: { resourceVersion: string } }>(`${this.pathOf(k)}?limit=1`, signal);
          this.start = Number(list.metadata.resourceVersion);
          this.startError = undefined;
          this.changed();
          return this.start;
        } catch (err) {
          last = err;
        }
      }
      this.starting = undefined;
      throw last instanceof Error ? last : new Error("no kind to follow");
    })();
    return this.starting;
  }

  private setState(resource: string, s: KindState): void {
    this.states.set(resource, s);
    this.changed();
  }

  /** Follows one kind until `signal` aborts (pause, a kind unchecked, the page left). */
  async follow(k: StreamKind, all: StreamKind[], signal: AbortSignal): Promise<void> {
    let backoff = 500;
    this.setState(k.resource, { state: "starting" });
    while (!signal.aborted) {
      try {
        const from = this.lastRevision.get(k.resource) ?? (await this.startRevision(all, signal));
        if (!this.lastRevision.has(k.resource)) this.lastRevision.set(k.resource, from);
        const opened = Date.now();
        const res = await apiFetch(`${this.pathOf(k)}?watch=1&allowWatchBookmarks=true&resourceVersion=${from}`, { signal });
        this.setState(k.resource, { state: "live" });
        backoff = 500;
        for await (const line of lines(res, signal)) {
          // Lines already read when the watch was stopped (pause): not added.
          if (signal.aborted) return;
          if (!line) continue;
          const ev = JSON.parse(line) as {
            type: string;
            object: Record<string, unknown> & { code?: number; message?: string; metadata?: { resourceVersion?: string } };
          };
          if (ev.type === "ERROR") {
            if (ev.object.code === 410) {
              await this.skipGone(k, signal);
              break;
            }
            throw new ApiError(ev.object.code ?? 500, ev.object.message ?? "watch error");
          }
          const rv = Number(ev.object.metadata?.resourceVersion ?? 0);
          // A resumed watch starts after `from`: anything not newer was shown already.
          if (rv <= (this.lastRevision.get(k.resource) ?? 0)) continue;
          this.lastRevision.set(k.resource, rv);
          if (ev.type === "BOOKMARK") continue;
          this.log.add(k.resource, k.kind, ev.type as Verb, ev.object);
          this.changed();
        }
        if (signal.aborted) return;
        // The stream ended (its timeout, or the api went away): resume from the last revision, at once unless it ended at once.
        if (Date.now() - opened < 1000) {
          this.setState(k.resource, { state: "retrying", message: "the watch ended" });
          await sleep(backoff, signal);
          backoff = Math.min(backoff * 2, 10_000);
        }
      } catch (err) {
        if (signal.aborted) return;
        if (err instanceof ApiError && err.code === 403) {
          this.setState(k.resource, { state: "forbidden", message: err.message });
          return;
        }
        if (err instanceof ApiError && err.code >= 400 && err.code < 500 && err.code !== 429) {
          this.setState(k.resource, { state: "failed", message: `${err.code}: ${err.message}` });
          return;
        }
        if (this.start === undefined) this.startError = message(err);
        this.setState(k.resource, { state: "retrying", message: message(err) });
        await sleep(backoff, signal);
        backoff = Math.min(backoff * 2, 10_000);
      }
    }
  }

  /** 410: the kind's changes after its last revision are no longer kept: go on from the current revision, the gap shown. */
  private async skipGone(k: StreamKind, signal: AbortSignal): Promise<void> {
    const list = await getJson<{ metadata: { resourceVersion: string } }>(`${this.pathOf(k)}?limit=1`, signal);
    const to = Number(list.metadata.resourceVersion);
    const from = this.lastRevision.get(k.resource) ?? 0;
    this.gaps.push({ resource: k.resource, from, to });
    this.lastRevision.set(k.resource, to);
    this.changed();
  }
}
