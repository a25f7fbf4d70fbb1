import type { Container, ContainerStatus, Pod, Probe } from "@choreo/kit/gen/choreo/core/v1/core";
import type { Logger } from "@choreo/kit/log";
import type { PodRuntimeStatus, Runtime } from "../runtime/runtime.js";
import { runProbe, type ProbeOutcome } from "./run-probe.js";

/** The three kinds of probe, in the kubelet's words. */
export type ProbeKind = "Liveness" | "Readiness" | "Startup";

/** What the prober tells the agent. */
export interface ProberHooks {
  /** A result changed: the pod's status should be rebuilt (enqueue its key). */
  changed(uid: string): void;
  /** A probe failed once (the kubelet's `Unhealthy` event). */
  unhealthy(uid: string, container: string, kind: ProbeKind, message: string): void;
  /** A liveness or startup probe crossed its failure threshold: the container must be killed. */
  kill(uid: string, container: string, kind: ProbeKind, gracePeriodSeconds: number): void;
}

/**
 * Probe state of one container run and one kind (the kubelet's worker):
 * starts `initialDelaySeconds` after the container started, then every
 * `periodSeconds`; flips to success after `successThreshold` successes in
 * a row and to failure after `failureThreshold` failures in a row.
 */
class Worker {
  /** The current result: readiness starts false, liveness true, startup unknown (false). */
  result: boolean;
  private successes = 0;
  private failures = 0;
  private timer: NodeJS.Timeout | undefined;
  private stopped = false;

  constructor(
    readonly kind: ProbeKind,
    private readonly probe: Probe,
    private readonly run: () => Promise<ProbeOutcome>,
    private readonly onResult: (w: Worker, changed: boolean, o: ProbeOutcome) => void,
    private readonly gate: () => boolean,
  ) {
    this.result = kind === "Liveness";
  }

  start(startedAtMs: number): void {
    const delay = Math.max(0, startedAtMs + (this.probe.initialDelaySeconds || 0) * 1000 - Date.now());
    this.schedule(delay);
  }

  stop(): void {
    this.stopped = true;
    clearTimeout(this.timer);
  }

  private schedule(ms: number): void {
    if (this.stopped) return;
    this.timer = setTimeout(() => void this.tick(), ms);
    this.timer.unref();
  }

  private async tick(): Promise<void> {
    const period = Math.max(1, this.probe.periodSeconds || 10) * 1000;
    if (!this.gate()) return this.schedule(period); // waits for the startup probe
    const o = await this.run();
    if (this.stopped) return;
    let changed = false;
    if (o.ok) {
      this.failures = 0;
      this.successes++;
      if (!this.result && this.successes >= Math.max(1, this.probe.successThreshold || 1)) changed = this.result = true;
    } else {
      this.successes = 0;
      this.failures++;
      if ((this.result || this.kind !== "Liveness") && this.failures >= Math.max(1, this.probe.failureThreshold || 3)) {
        changed = this.result;
        this.result = false;
      }
    }
    this.onResult(this, changed, o);
    // A startup probe is done once it succeeded.
    if (this.kind === "Startup" && this.result) return;
    this.schedule(period);
  }

  /** Whether the last failure crossed the threshold (for liveness/startup kills). */
  get failedOut(): boolean {
    return !this.result && this.failures >= Math.max(1, this.probe.failureThreshold || 3);
  }
}

interface ContainerProbes {
  containerId: string;
  workers: Map<ProbeKind, Worker>;
}

/**
 * Runs every probe of the containers of the pods on this node and turns
 * their results into `ready` and `started` of container statuses. Workers
 * belong to one container run (its containerId): a restarted container
 * gets fresh workers, as with the kubelet.
 */
export class Prober {
  private readonly pods = new Map<string, Map<string, ContainerProbes>>();

  constructor(
    private readonly runtime: Pick<Runtime, "exec">,
    private readonly hooks: ProberHooks,
    private readonly log: Logger,
  ) {}

  /** Starts workers for running containers with probes, stops those of containers that are gone or restarted. */
  sync(pod: Pod, rt: PodRuntimeStatus): void {
    const uid = rt.uid;
    const held = this.pods.get(uid) ?? new Map<string, ContainerProbes>();
    this.pods.set(uid, held);
    for (const spec of pod.spec?.containers ?? []) {
      const cs = rt.containerStatuses.find((c) => c.name === spec.name);
      const running = cs?.state?.running ? cs : undefined;
      const cur = held.get(spec.name);
      if (cur && (!running || cur.containerId !== running.containerId)) {
        for (const w of cur.workers.values()) w.stop();
        held.delete(spec.name);
      }
      if (running && !held.has(spec.name) && hasProbes(spec)) held.set(spec.name, this.startWorkers(pod, uid, spec, running, rt.podIp));
    }
  }

  /** The runtime status with `ready` and `started` as the probes say (containers without probes keep the runtime's). */
  apply(rt: PodRuntimeStatus): PodRuntimeStatus {
    const held = this.pods.get(rt.uid);
    if (!held) return rt;
    const containerStatuses = rt.containerStatuses.map((cs): ContainerStatus => {
      const p = held.get(cs.name);
      if (!p || p.containerId !== cs.containerId || !cs.state?.running) return cs;
      const startup = p.workers.get("Startup");
      const started = startup ? startup.result : true;
      const readiness = p.workers.get("Readiness");
      const ready = started && (readiness ? readiness.result : cs.ready);
      return { ...cs, started, ready };
    });
    return { ...rt, containerStatuses };
  }

  /** Stops the pod's workers (the pod stopped or left the node). */
  forget(uid: string): void {
    for (const p of this.pods.get(uid)?.values() ?? []) for (const w of p.workers.values()) w.stop();
    this.pods.delete(uid);
  }

  close(): void {
    for (const uid of [...this.pods.keys()]) this.forget(uid);
  }

  private startWorkers(pod: Pod, uid: string, spec: Container, cs: ContainerStatus, podIp: string): ContainerProbes {
    const entry: ContainerProbes = { containerId: cs.containerId, workers: new Map() };
    const startedAt = Date.parse(cs.state?.running?.startedAt ?? "") || Date.now();
    const target = { podIp, container: spec, exec: (cmd: readonly string[], ms: number) => this.runtime.exec(uid, spec.name, cmd, ms) };
    const startupDone = (): boolean => entry.workers.get("Startup")?.result ?? true;
    const add = (kind: ProbeKind, probe: Probe | undefined): void => {
      if (!probe) return;
      const gate = kind === "Startup" ? () => true : startupDone;
      const w = new Worker(
        kind,
        probe,
        () => runProbe(probe, target),
        (worker, changed, o) => this.onResult(pod, uid, spec.name, worker, changed, o, probe),
        gate,
      );
      entry.workers.set(kind, w);
      w.start(startedAt);
    };
    add("Startup", spec.startupProbe);
    add("Liveness", spec.livenessProbe);
    add("Readiness", spec.readinessProbe);
    return entry;
  }

  private onResult(pod: Pod, uid: string, container: string, w: Worker, changed: boolean, o: ProbeOutcome, probe: Probe): void {
    if (!o.ok) this.hooks.unhealthy(uid, container, w.kind, `${w.kind} probe failed: ${o.message}`);
    if (changed) {
      this.log.info({ pod: `${pod.metadata?.namespace}/${pod.metadata?.name}`, container, probe: w.kind, result: w.result }, "probe result changed");
      this.hooks.changed(uid);
    }
    if ((w.kind === "Liveness" || w.kind === "Startup") && w.failedOut) {
      w.stop();
      const grace = probe.terminationGracePeriodSeconds ?? pod.spec?.terminationGracePeriodSeconds ?? 30;
      this.hooks.kill(uid, container, w.kind, Number(grace));
    }
  }
}

function hasProbes(c: Container): boolean {
  return Boolean(c.livenessProbe || c.readinessProbe || c.startupProbe);
}
