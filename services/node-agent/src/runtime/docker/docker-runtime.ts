import path from "node:path";
import Dockerode from "dockerode";
import type { EphemeralContainer, Pod } from "@choreo/kit/gen/choreo/core/v1/core";
import type { Logger } from "@choreo/kit/log";
import { LOCAL_IMAGES } from "../../images/types.js";
import type { PodNetwork } from "../../net/types.js";
import {
  RuntimeRequestError,
  type ExecResult,
  type LogOptions,
  type PodRuntimeStatus,
  type Runtime,
  type RuntimeListener,
  type RuntimePod,
  type StreamOptions,
  type StreamSession,
} from "../runtime.js";
import { dockerMessage, removeQuietly, statusCode, stopQuietly } from "./engine.js";
import { EventFollower, type ContainerEvent } from "./events.js";
import { attachTo, execIn, execStreamIn } from "./exec.js";
import { imagePresent } from "./images.js";
import { scanNode } from "./inventory.js";
import { Launcher, type Backoff } from "./launcher.js";
import { containerLogs } from "./logs.js";
import { podOfLabels, SANDBOX } from "./names.js";
import { findInstance, instancesOf, newContainerRecord, podStatusOf, type ContainerRecord, type PodRecord } from "./pod-record.js";
import { refreshInstance } from "./refresh.js";
import { podDirOf, preparePodDir, removePodDir, runSandbox, type SandboxDeps } from "./sandbox.js";
import { removePod } from "./teardown.js";
import { isRunning } from "./status.js";
import { POD_INITIALIZING } from "../../init-containers.js";

/** Options of {@link DockerRuntime}. */
export interface DockerRuntimeOptions {
  /** The node's name: on every container's labels, so each agent finds its own. */
  node: string;
  network: PodNetwork;
  /** Where pods' resolv.conf, hosts and emptyDir volumes live (`<stateDir>/pods/<uid>`). */
  stateDir: string;
  /** The nameserver of ClusterFirst pods. */
  dnsServer: string;
  clusterDomain?: string;
  /** The node's InternalIP: status.hostIP in env, and the IP of hostNetwork pods. */
  hostIp?: string;
  log: Logger;
  /** Default: the local engine's socket (or DOCKER_HOST). */
  docker?: Dockerode;
  /** Image pull and create retries; default 1 s doubling to 5 min. */
  pullBackoff?: Backoff;
  /** Localhost seccomp profiles (`localhostProfile` is a path under it); default `<stateDir>/seccomp`. */
  seccompDir?: string;
}

/**
 * Pods as docker containers: a sandbox holding the pod's network and IPC
 * namespaces (its netns joined to the node's pod network), each app
 * container joined to it. Every container carries the pod's labels, so a
 * restarted agent finds them (`init`) and adopts them. Status comes from
 * inspect, kept current by the engine's events.
 */
/** When a 137 exit without docker's OOM flag is read again after its die event (after the first read's settle window). */
const OOM_RETRIES_MS = [2_000, 3_000];

export class DockerRuntime implements Runtime {
  readonly name = "docker";
  readonly probes = true;
  private readonly docker: Dockerode;
  private readonly pods = new Map<string, PodRecord>();
  private readonly listeners: RuntimeListener[] = [];
  private readonly launcher: Launcher;
  private readonly log: Logger;
  private events: EventFollower | undefined;

  constructor(private readonly opts: DockerRuntimeOptions) {
    this.docker = opts.docker ?? new Dockerode();
    this.log = opts.log;
    this.launcher = new Launcher({
      docker: this.docker,
      node: opts.node,
      hostIp: opts.hostIp ?? "",
      log: opts.log,
      backoff: opts.pullBackoff ?? { initialMs: 1000, maxMs: 300_000 },
      holds: (p) => this.pods.get(p.ref.uid) === p,
      changed: (p) => this.changed(p),
      seccompDir: opts.seccompDir ?? path.join(opts.stateDir, "seccomp"),
    });
  }

  async init(): Promise<void> {
    if (!(await imagePresent(this.docker, LOCAL_IMAGES.pause))) {
      throw new Error(
        `the pod sandbox image ${LOCAL_IMAGES.pause} is missing from the Docker engine: build choreo's local images first (npm start does; see infra/images)`,
      );
    }
    await this.opts.network.init();
    // Following events before the scan: nothing that happens in between is missed.
    this.events = new EventFollower(this.docker, this.opts.node, { onEvent: (e) => this.onEvent(e), onReconnect: () => void this.refreshAll() }, this.log);
    await this.events.start();
    const inv = await scanNode(this.docker, this.opts.node, this.opts.stateDir);
    for (const dead of inv.dead) {
      this.log.info({ uid: dead.uid, node: this.opts.node }, "removing containers of a pod whose sandbox is gone");
      await Promise.all(dead.containerIds.map((id) => removeQuietly(this.docker, id)));
      if (!dead.hostNetwork) await this.opts.network.detach(dead.uid, dead.podIp);
      await removePodDir(podDirOf(this.opts.stateDir, dead.uid));
    }
    await Promise.all(inv.stale.map((id) => removeQuietly(this.docker, id)));
    for (const p of inv.held) {
      if (!p.hostNetwork && p.podIp && !this.opts.network.reserve(p.podIp)) this.log.warn({ pod: p.ref, ip: p.podIp }, "pod IP could not be reserved");
      this.pods.set(p.ref.uid, p);
    }
    this.log.info({ node: this.opts.node, held: inv.held.length, removed: inv.dead.length }, "docker runtime ready");
  }

  async startPod(pod: Pod): Promise<PodRuntimeStatus> {
    const meta = pod.metadata;
    const ref: RuntimePod = { uid: meta?.uid ?? "", namespace: meta?.namespace ?? "", name: meta?.name ?? "" };
    const existing = this.pods.get(ref.uid);
    if (existing) return podStatusOf(existing);
    try {
      const p = await this.startSandbox(ref, pod);
      this.pods.set(ref.uid, p);
      // A pod with init containers starts none here: the agent starts them in turn (startContainer).
      await Promise.all([...p.containers.values()].filter((c) => c.waiting?.reason !== POD_INITIALIZING).map((c) => this.launcher.launch(p, c)));
      const status = podStatusOf(p);
      p.lastSeen = JSON.stringify(status);
      return status;
    } catch (err) {
      // Nothing half-made stays behind: the agent retries the whole start.
      await this.stopPod(ref, 0).catch((e: unknown) => this.log.warn({ err: e, pod: ref }, "clean-up after a failed start failed"));
      throw err;
    }
  }

  private async startSandbox(ref: RuntimePod, pod: Pod): Promise<PodRecord> {
    const podDir = podDirOf(this.opts.stateDir, ref.uid);
    await preparePodDir(pod, podDir, { nameserver: this.opts.dnsServer, clusterDomain: this.opts.clusterDomain });
    const sandbox = await runSandbox(this.sandboxDeps(), ref, pod, podDir);
    const containers = new Map<string, ContainerRecord>();
    const inits = pod.spec?.initContainers ?? [];
    for (const c of [...inits, ...(pod.spec?.containers ?? [])]) {
      const rec = newContainerRecord(c.name, c.image, c);
      if (inits.length > 0) rec.waiting = { reason: POD_INITIALIZING, message: "" };
      containers.set(c.name, rec);
    }
    return {
      ref,
      pod,
      sandboxId: sandbox.id,
      podIp: sandbox.podIp,
      hostNetwork: Boolean(pod.spec?.hostNetwork),
      startedAt: sandbox.startedAt,
      podDir,
      containers,
      stopping: false,
      inflight: new Set(),
      lastSeen: "",
    };
  }

  /**
   * The sandbox died (engine restart, killed from outside): its namespaces
   * are gone or going, so before a container restarts the pod gets a new
   * sandbox with the same IP, as the kubelet does, and containers still
   * running in the old namespaces are stopped (the restart policy brings
   * them back in the new ones).
   */
  private async ensureSandbox(p: PodRecord): Promise<void> {
    const info = await this.docker
      .getContainer(p.sandboxId)
      .inspect()
      .catch(() => undefined);
    if (info?.State.Running || !p.pod) return;
    this.log.info({ pod: p.ref, node: this.opts.node }, "recreating the pod sandbox");
    await this.stopApps(p, 0);
    await removeQuietly(this.docker, p.sandboxId);
    if (!p.hostNetwork) await this.opts.network.detach(p.ref.uid, p.podIp);
    const sandbox = await runSandbox(this.sandboxDeps(), p.ref, p.pod, p.podDir, p.podIp || undefined);
    p.sandboxId = sandbox.id;
    p.podIp = sandbox.podIp;
  }

  /** Stops the pod's running app containers (the sandbox died) and reads their exits. */
  private async stopApps(p: PodRecord, graceSeconds: number): Promise<void> {
    const running = instancesOf(p).filter(isRunning);
    await Promise.all(running.map((i) => stopQuietly(this.docker, i.id, graceSeconds)));
    for (const i of running) await this.refresh(p, i.id);
  }

  private sandboxDeps(): SandboxDeps {
    return { docker: this.docker, network: this.opts.network, node: this.opts.node, hostIp: this.opts.hostIp ?? "" };
  }

  async stopPod(pod: RuntimePod, gracePeriodSeconds: number): Promise<void> {
    const p = this.pods.get(pod.uid);
    if (p) {
      p.stopping = true;
      for (const c of p.containers.values()) this.launcher.cancel(c);
      await Promise.allSettled([...p.inflight]);
    }
    const {
      docker,
      opts: { network, node, stateDir },
    } = this;
    await removePod({ docker, network, node, stateDir }, pod.uid, p, gracePeriodSeconds);
    if (this.pods.get(pod.uid) === p) this.pods.delete(pod.uid);
  }

  async restartContainer(uid: string, container: string): Promise<void> {
    const { p, c } = this.mustGet(uid, container);
    if (!c.spec) throw new Error(`pod ${uid} was not adopted: its spec is unknown`);
    if (!c.current || c.waiting || isRunning(c.current)) return;
    const older = c.previous;
    c.previous = c.current;
    c.current = undefined;
    c.restartCount++;
    c.waiting = { reason: "ContainerCreating", message: "" };
    c.backoffMs = 0;
    // Only the run before stays (lastState, `previous` logs), as with the kubelet.
    if (older && !older.removed) await removeQuietly(this.docker, older.id);
    await this.ensureSandbox(p);
    await this.launcher.launch(p, c);
  }

  async startContainer(uid: string, container: string): Promise<void> {
    const { p, c } = this.mustGet(uid, container);
    if (!c.spec || c.current || c.waiting?.reason !== POD_INITIALIZING) return;
    c.waiting = { reason: "ContainerCreating", message: "" };
    await this.launcher.launch(p, c);
  }

  async startEphemeralContainer(pod: Pod, container: EphemeralContainer): Promise<void> {
    const p = this.pods.get(pod.metadata?.uid ?? "");
    if (!p || p.stopping || p.containers.has(container.name)) return;
    const { targetContainerName, ...spec } = container;
    const c = newContainerRecord(spec.name, spec.image, spec);
    c.ephemeral = { target: targetContainerName };
    p.containers.set(c.name, c);
    await this.launcher.launch(p, c);
  }

  async killContainer(uid: string, container: string, gracePeriodSeconds: number): Promise<void> {
    const { p, c } = this.mustGet(uid, container);
    if (!c.current || !isRunning(c.current)) return;
    // The instance's id taken now: while it stops, its die event may move the record on (a restart in between).
    const id = c.current.id;
    await stopQuietly(this.docker, id, gracePeriodSeconds);
    await this.refresh(p, id);
    this.changed(p);
  }

  async adoptPod(pod: Pod): Promise<PodRuntimeStatus | undefined> {
    const meta = pod.metadata;
    const p = meta ? this.pods.get(meta.uid) : undefined;
    if (!meta || !p) return undefined;
    p.pod = pod;
    p.ref = { uid: meta.uid, namespace: meta.namespace, name: meta.name };
    const missing: ContainerRecord[] = [];
    const inits = pod.spec?.initContainers ?? [];
    for (const spec of [...inits, ...(pod.spec?.containers ?? [])]) {
      let c = p.containers.get(spec.name);
      if (!c) p.containers.set(spec.name, (c = newContainerRecord(spec.name, spec.image, spec)));
      c.spec = spec;
      if (!c.current) missing.push(c);
    }
    // A container that never got an instance (its image was missing when the agent went) is started now;
    // with init containers the agent starts it when its turn comes (startContainer), never before.
    // Ephemeral containers found by their labels: their spec and target again (a missing one the agent starts anew).
    for (const { targetContainerName, ...spec } of pod.spec?.ephemeralContainers ?? []) {
      const c = p.containers.get(spec.name);
      if (c) Object.assign(c, { spec, ephemeral: { target: targetContainerName } });
    }
    if (inits.length > 0) for (const c of missing) c.waiting = { reason: POD_INITIALIZING, message: "" };
    else await Promise.all(missing.map((c) => this.launcher.launch(p, c)));
    const status = podStatusOf(p);
    p.lastSeen = JSON.stringify(status);
    return status;
  }

  podStatus(uid: string): PodRuntimeStatus | undefined {
    const p = this.pods.get(uid);
    return p ? podStatusOf(p) : undefined;
  }

  listPods(): RuntimePod[] {
    return [...this.pods.values()].map((p) => ({ ...p.ref }));
  }

  async exec(uid: string, container: string, command: readonly string[], timeoutMs: number): Promise<ExecResult> {
    const { p, c } = this.mustFind(uid, container);
    if (!c.current || !isRunning(c.current)) throw new RuntimeRequestError(`container "${container}" in pod "${p.ref.name}" is not running`);
    try {
      return await execIn(this.docker, c.current.id, command, timeoutMs);
    } catch (err) {
      if (statusCode(err) === 404 || statusCode(err) === 409) throw new RuntimeRequestError(dockerMessage(err));
      throw err;
    }
  }

  async execStream(uid: string, container: string, command: readonly string[], opts: StreamOptions): Promise<StreamSession> {
    const id = this.runningId(uid, container);
    try {
      return await execStreamIn(this.docker, id, command, opts);
    } catch (err) {
      if (statusCode(err) === 404 || statusCode(err) === 409) throw new RuntimeRequestError(dockerMessage(err));
      throw err;
    }
  }

  async attach(uid: string, container: string, opts: StreamOptions): Promise<StreamSession> {
    const id = this.runningId(uid, container);
    try {
      return await attachTo(this.docker, id, opts);
    } catch (err) {
      if (statusCode(err) === 404 || statusCode(err) === 409) throw new RuntimeRequestError(dockerMessage(err));
      throw err;
    }
  }

  /** The Docker id of a running container of a held pod, or a RuntimeRequestError. */
  private runningId(uid: string, container: string): string {
    const { p, c } = this.mustFind(uid, container);
    if (!c.current || !isRunning(c.current)) throw new RuntimeRequestError(`container "${container}" in pod "${p.ref.name}" is not running`);
    return c.current.id;
  }

  async *logs(uid: string, opts: LogOptions, signal: AbortSignal): AsyncIterable<Uint8Array> {
    const { p, c } = this.mustFind(uid, opts.container);
    const instance = opts.previous ? c.previous : c.current;
    if (!instance || instance.removed) {
      if (opts.previous) throw RuntimeRequestError.noPrevious(c.name, p.ref.name);
      throw new RuntimeRequestError(`container "${c.name}" in pod "${p.ref.name}" is waiting to start: ${c.waiting?.reason ?? "ContainerCreating"}`);
    }
    try {
      yield* containerLogs(this.docker, instance.id, opts, c.spec?.tty ?? false, signal);
    } catch (err) {
      if (statusCode(err) === 404) throw new RuntimeRequestError(`container "${c.name}" in pod "${p.ref.name}" not found`);
      throw err;
    }
  }

  onChange(listener: RuntimeListener): void {
    this.listeners.push(listener);
  }

  async close(): Promise<void> {
    this.events?.stop();
    for (const p of this.pods.values()) for (const c of p.containers.values()) this.launcher.cancel(c);
    this.pods.clear();
  }

  // --- internals -----------------------------------------------------------

  /** The pod and container, or a RuntimeRequestError (logs, exec: the api answers 400). */
  private mustFind(uid: string, container: string): { p: PodRecord; c: ContainerRecord } {
    const p = this.pods.get(uid);
    if (!p) throw RuntimeRequestError.noPod(uid, this.opts.node);
    const c = p.containers.get(container);
    if (!c) throw RuntimeRequestError.noContainer(container, p.ref.name);
    return { p, c };
  }

  /** The pod and container the agent acts on; a plain Error (a bug or a race, retried). */
  private mustGet(uid: string, container: string): { p: PodRecord; c: ContainerRecord } {
    const p = this.pods.get(uid);
    const c = p?.containers.get(container);
    if (!p || !c) throw new Error(`docker runtime holds no container ${container} of pod ${uid}`);
    return { p, c };
  }

  private onEvent(e: ContainerEvent): void {
    const owner = podOfLabels(e.labels);
    const p = owner ? this.pods.get(owner.uid) : undefined;
    if (!owner || !p || p.stopping) return;
    if (owner.container === SANDBOX) {
      if (e.action !== "die" || e.id !== p.sandboxId) return;
      // The pod's containers lost their network: they stop, and their restarts get a new sandbox.
      this.log.warn({ pod: p.ref, node: this.opts.node }, "pod sandbox died");
      this.stopApps(p, 0).then(
        () => this.changed(p),
        (err: unknown) => this.log.warn({ err, pod: p.ref }, "stopping the containers of a dead sandbox failed"),
      );
      return;
    }
    const found = findInstance(p, e.id);
    if (!found) return;
    if (e.action === "destroy") {
      found.c[found.slot]!.removed = true;
      this.changed(p);
      return;
    }
    this.refreshAfterEvent(p, e.id, e.action === "die" ? 0 : -1);
  }

  /**
   * Re-reads an instance after its event and reports the pod changed. A die (`oomRetry` ≥ 0) of a memory-limited
   * container exiting 137 without docker's OOM flag is read again 2 s and 5 s later: the flag can come after the
   * settle window and its oom event be lost under load (a guess at why the OOMKilled scenario timed out once in CI).
   */
  private refreshAfterEvent(p: PodRecord, id: string, oomRetry: number): void {
    this.refresh(p, id, oomRetry >= 0).then(
      (unsettled) => {
        this.changed(p);
        const wait = OOM_RETRIES_MS[oomRetry];
        if (unsettled && wait !== undefined && !p.stopping) setTimeout(() => this.refreshAfterEvent(p, id, oomRetry + 1), wait).unref();
      },
      (err: unknown) => this.log.warn({ err, pod: p.ref, id }, "container refresh failed"),
    );
  }

  private refresh(p: PodRecord, id: string, settleOom = false): Promise<boolean> {
    return refreshInstance(this.docker, p, id, settleOom);
  }

  /** After the event stream was down: re-reads every instance. */
  private async refreshAll(): Promise<void> {
    for (const p of this.pods.values()) {
      try {
        for (const i of instancesOf(p)) await this.refresh(p, i.id);
        this.changed(p);
      } catch (err) {
        this.log.warn({ err, pod: p.ref }, "container refresh failed");
      }
    }
  }

  /** Tells the listeners when the pod's status differs from the one last handed out. */
  private changed(p: PodRecord): void {
    if (p.stopping || this.pods.get(p.ref.uid) !== p) return;
    const now = JSON.stringify(podStatusOf(p));
    if (now === p.lastSeen) return;
    p.lastSeen = now;
    for (const l of this.listeners) {
      try {
        l({ ...p.ref });
      } catch (err) {
        this.log.warn({ err, pod: p.ref }, "runtime listener failed");
      }
    }
  }
}
