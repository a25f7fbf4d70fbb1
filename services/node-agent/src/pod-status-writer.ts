// The node agent's one writer of pods' status (the kubelet's status
// manager): per pod, one write at a time, always of the latest status;
// an intermediate first status (ContainerCreating) is held briefly so a pod
// Running within the window costs one write.
import { isConflict, isNotFound, keyOf } from "@choreo/kit";
import type { ApiClient } from "@choreo/kit/client";
import type { Pod, PodStatus } from "@choreo/kit/gen/choreo/core/v1/core";
import { FailureLog, type Logger } from "@choreo/kit/log";
import { sameStatus } from "./pod-status.js";

/** Default of {@link PodStatusWriterOptions.holdMs}, overridden by `CHOREO_STATUS_HOLD_MS`. */
export const DEFAULT_STATUS_HOLD_MS = 200;

export interface PodStatusWriterOptions {
  client: Pick<ApiClient, "typed">;
  log: Logger;
  /** How long the first status of a freshly started pod is held while it only says ContainerCreating (0: written at once). */
  holdMs?: number | undefined;
  /** Called with each pod as the api answered a status write (the agent's informer takes it for the change at its revision). */
  onWritten?: ((pod: Pod) => void) | undefined;
  /**
   * Called with the pod a write was refused for with a conflict (the status is dropped): the agent reconciles the
   * pod again from its informer's newer copy. The newer pod may be this agent's own write, which the agent does
   * not reconcile when it comes back (a reconcile that read the pod before that write landed set a status on the
   * older copy): without this, that status would be lost until the next resync.
   */
  onConflict?: ((pod: Pod) => void) | undefined;
  /** Where failed writes are logged (kit/log FailureLog, shared by a process's hollow nodes); default one of its own. */
  failures?: FailureLog | undefined;
}

/** The constant message of a failed status write. */
const STATUS_NOT_WRITTEN = "pod status not written; retrying";

/** The hold window from the env (`CHOREO_STATUS_HOLD_MS`), else the default. */
export function statusHoldMsFromEnv(env: NodeJS.ProcessEnv = process.env): number {
  const v = Number(env.CHOREO_STATUS_HOLD_MS);
  return env.CHOREO_STATUS_HOLD_MS !== undefined && env.CHOREO_STATUS_HOLD_MS !== "" && Number.isFinite(v) && v >= 0 ? v : DEFAULT_STATUS_HOLD_MS;
}

/**
 * Whether a status is only a step nobody needs to see: Pending, no init
 * containers, every container waiting in ContainerCreating.
 */
export function isIntermediate(s: PodStatus): boolean {
  return (
    s.phase === "Pending" &&
    s.initContainerStatuses.length === 0 &&
    s.containerStatuses.length > 0 &&
    s.containerStatuses.every((c) => c.state?.waiting?.reason === "ContainerCreating")
  );
}

interface PodEntry {
  /** The latest status asked for, on the pod it was computed from; undefined when nothing is left to write. */
  pending: { pod: Pod; status: PodStatus } | undefined;
  /** The pod as this writer last wrote it (newer than the informer's copy until the informer catches up). */
  written: Pod | undefined;
  inFlight: boolean;
  timer: ReturnType<typeof setTimeout> | undefined;
  /** When the first status of this pod was asked for (ms), for the hold window. */
  firstAskedMs: number;
  /** Failed writes in a row (errors other than conflict and NotFound). */
  failures: number;
}

/** A resourceVersion as a number (choreo's are revisions), NaN if not one. */
const revisionOf = (p: Pod | undefined): number => Number(p?.metadata?.resourceVersion || NaN);

/**
 * Writes pods' status through `pods/status`, one write per pod at a time,
 * coalesced: a newer status replaces the queued one. A write is made on
 * the pod it was computed from, or on the pod this writer wrote last when
 * that is newer (the informer has not delivered the agent's own write yet).
 * A conflict drops the write and calls `onConflict`: a newer pod exists,
 * whose reconcile asks again (level-triggered); NotFound drops it (the
 * pod is gone); other errors retry with back-off.
 */
export class PodStatusWriter {
  private readonly entries = new Map<string, PodEntry>();
  private readonly holdMs: number;
  private ownFailureLog: FailureLog | undefined;

  constructor(private readonly opts: PodStatusWriterOptions) {
    this.holdMs = opts.holdMs ?? statusHoldMsFromEnv();
  }

  private get failures(): FailureLog {
    return (this.ownFailureLog ??= this.opts.failures ?? new FailureLog(this.opts.log));
  }

  /** Asks for `status` to be the pod's status; returns at once. */
  set(pod: Pod, status: PodStatus): void {
    const uid = pod.metadata?.uid ?? "";
    let e = this.entries.get(uid);
    if (!e) {
      if (sameStatus(pod.status, status)) return;
      e = { pending: { pod, status }, written: undefined, inFlight: false, timer: undefined, firstAskedMs: Date.now(), failures: 0 };
      this.entries.set(uid, e);
      this.kick(uid, e, true); // just compared with the pod's status: no need to again
      return;
    }
    // The informer caught up with this writer's own write: its copy is the base again.
    if (e.written && !(revisionOf(e.written) > revisionOf(pod))) e.written = undefined;
    e.pending = { pod, status };
    if (e.inFlight) return; // written when the write in flight ends
    if (e.failures === 0) this.kick(uid, e);
  }

  /**
   * The informer now holds `pod`, which is this writer's own write as the api answered it (the agent hands it
   * over without a reconcile, as the kubelet does not sync a pod for a status-only update): the informer's copy
   * is the base again, and an entry with nothing left to do goes.
   */
  caughtUp(pod: Pod): void {
    const uid = pod.metadata?.uid ?? "";
    const e = this.entries.get(uid);
    if (!e?.written || revisionOf(e.written) > revisionOf(pod)) return;
    e.written = undefined;
    this.settle(uid, e);
  }

  /** Pods this writer keeps an entry for (tests). */
  get size(): number {
    return this.entries.size;
  }

  /** Forgets a pod (stopped, deleted): nothing more is written for it. */
  forget(uid: string): void {
    const e = this.entries.get(uid);
    if (e?.timer) clearTimeout(e.timer);
    this.entries.delete(uid);
  }

  /** Pods with a status not yet written (tests). */
  get pendingCount(): number {
    return [...this.entries.values()].filter((e) => e.pending || e.inFlight).length;
  }

  /** Writes the pending status now, or when the hold window ends (`differs`: the caller found it differs from what is written). */
  private kick(uid: string, e: PodEntry, differs = false): void {
    const p = e.pending;
    if (!p || e.inFlight) return;
    const base = e.written ?? p.pod;
    if (!differs && sameStatus(base.status, p.status)) {
      e.pending = undefined;
      if (e.timer) clearTimeout(e.timer);
      e.timer = undefined;
      this.settle(uid, e);
      return;
    }
    // The first status of a freshly started pod (none reported yet), if only ContainerCreating, waits out the window.
    const fresh = !e.written && (p.pod.status?.containerStatuses.length ?? 0) === 0;
    const holdLeft = e.firstAskedMs + this.holdMs - Date.now();
    if (fresh && isIntermediate(p.status) && holdLeft > 0) {
      e.timer ??= setTimeout(() => {
        e.timer = undefined;
        this.kick(uid, e);
      }, holdLeft);
      return;
    }
    if (e.timer) clearTimeout(e.timer);
    e.timer = undefined;
    e.pending = undefined;
    e.inFlight = true;
    void this.write(uid, e, p, { ...base, status: p.status });
  }

  private async write(uid: string, e: PodEntry, asked: { pod: Pod; status: PodStatus }, pod: Pod): Promise<void> {
    let retryMs = 0;
    try {
      e.written = await this.opts.client.typed("pod").updateStatus(pod);
      if (e.failures > 0) {
        const key = keyOf(pod.metadata ?? { namespace: "", name: "" });
        this.failures.recovered(STATUS_NOT_WRITTEN, key, { pod: key }, this.opts.log);
      }
      e.failures = 0;
      this.opts.onWritten?.(e.written);
    } catch (err) {
      if (isConflict(err)) {
        this.opts.log.debug({ pod: keyOf(pod.metadata ?? { namespace: "", name: "" }) }, "pod status conflict; the newer pod is reconciled again");
        e.written = undefined;
        this.opts.onConflict?.(pod);
      } else if (isNotFound(err)) {
        e.written = undefined;
      } else {
        e.failures++;
        retryMs = Math.min(30_000, 500 * 2 ** (e.failures - 1));
        const key = keyOf(pod.metadata ?? { namespace: "", name: "" });
        this.failures.failed(STATUS_NOT_WRITTEN, key, err, { pod: key, retryMs }, this.opts.log);
        e.pending ??= asked; // unless a newer status came meanwhile
      }
    } finally {
      e.inFlight = false;
    }
    if (this.entries.get(uid) !== e) return; // forgotten meanwhile
    if (retryMs > 0) {
      e.timer = setTimeout(() => {
        e.timer = undefined;
        this.kick(uid, e);
      }, retryMs);
      return;
    }
    this.kick(uid, e);
    this.settle(uid, e);
  }

  /** Drops an entry with nothing left to do and no own write the informer has yet to deliver. */
  private settle(uid: string, e: PodEntry): void {
    if (!e.pending && !e.inFlight && !e.timer && !e.written && e.failures === 0) this.entries.delete(uid);
  }
}
