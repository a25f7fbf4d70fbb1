import type { ContainerStateTerminated, ContainerStatus, EphemeralContainer, Pod } from "@choreo/kit/gen/choreo/core/v1/core";
import { sleep } from "@choreo/kit/lifecycle";
import { IpPool } from "./ip-pool.js";
import {
  RuntimeRequestError,
  type ExecResult,
  type LogOptions,
  type PodRuntimeStatus,
  type Runtime,
  type RuntimeListener,
  type RuntimePod,
} from "./runtime.js";
import { POD_INITIALIZING } from "../init-containers.js";
import { nowRfc3339Cached as nowRfc3339, slottedTimeout } from "../clock.js";

/**
 * Pod annotations the hollow runtime obeys, so that tests running the agent
 * as a separate process can still script a pod's life (Jobs need pods that
 * finish).
 */
export const HOLLOW_ANNOTATIONS = {
  /** Every container exits this many ms after it starts (each run, restarts too). */
  exitAfterMs: "hollow.choreo.dev/exit-after-ms",
  /** The exit code of `exitAfterMs` (default 0). */
  exitCode: "hollow.choreo.dev/exit-code",
  /** "false": containers start unready. */
  ready: "hollow.choreo.dev/ready",
  /** The exit code of every init container run (default 0: each completes `startDelayMs` after it starts). */
  initExitCode: "hollow.choreo.dev/init-exit-code",
} as const;

/** Pods start `startDelayMs` to `startDelayMs` + this after the agent asks (clock `slottedTimeout`). */
export const HOLLOW_START_SLOT_MS = 20;

/** Options of {@link HollowRuntime}. */
export interface HollowRuntimeOptions {
  /** Where pod IPs come from (the node's spec.podCIDR). */
  podCidr: string;
  /** The IP of hostNetwork pods (the node's InternalIP). */
  hostIp?: string;
  /** How long a pod takes to start (default 50 ms). */
  startDelayMs?: number;
}

/** "pending": not started yet, its turn after the init containers before it (waiting PodInitializing). */
type State = "pending" | "waiting" | "running" | "terminated";

interface HollowContainer {
  name: string;
  /** An init container: it completes (exits `initExitCode`) `startDelayMs` after it starts. */
  init: boolean;
  /** An ephemeral container (kubectl debug): running from its start, never scripted, never restarted. */
  ephemeral?: boolean;
  /** What the container "printed": one line per start and exit (hollow pods run no process). */
  log: string[];
  image: string;
  state: State;
  startedAt: string;
  finishedAt: string;
  exitCode: number;
  restartCount: number;
  ready: boolean;
  last: ContainerStateTerminated | undefined;
  timer: NodeJS.Timeout | undefined;
}

interface HollowPod {
  ref: RuntimePod;
  ip: string;
  ownsIp: boolean;
  startedAt: string;
  containers: HollowContainer[];
  ready: boolean;
  /** `fail()` was called: every run of a container exits 1 right away. */
  failing: boolean;
  exitAfterMs: number | undefined;
  exitCode: number;
  initExitCode: number;
}

/**
 * A runtime without processes (kubemark's and kwok's idea): a pod is
 * Running after `startDelayMs`, with an IP from the node's pod CIDR. Tests
 * steer it with `fail`, `crash`, `complete` and `setReady`. State lives in
 * memory: after a restart the agent re-adopts pods from their api status.
 */
export class HollowRuntime implements Runtime {
  readonly name = "hollow";
  /** Hollow pods have nothing to probe: readiness comes from the annotation or `setReady`. */
  readonly probes = false;
  private readonly pods = new Map<string, HollowPod>();
  private readonly listeners: RuntimeListener[] = [];
  private readonly ips: IpPool;
  private readonly startDelayMs: number;

  constructor(private readonly opts: HollowRuntimeOptions) {
    this.ips = new IpPool(opts.podCidr);
    this.startDelayMs = opts.startDelayMs ?? 50;
  }

  async init(): Promise<void> {
    // State lives in memory: nothing to find after a restart (adoption works from the api's status).
  }

  async startPod(pod: Pod): Promise<PodRuntimeStatus> {
    const meta = pod.metadata;
    const uid = meta?.uid ?? "";
    const existing = this.pods.get(uid);
    if (existing) return this.statusOf(existing);
    const annotations = meta?.annotations ?? {};
    const hostNetwork = Boolean(pod.spec?.hostNetwork);
    const exitAfter = annotations[HOLLOW_ANNOTATIONS.exitAfterMs];
    const hp: HollowPod = {
      ref: { uid, namespace: meta?.namespace ?? "", name: meta?.name ?? "" },
      ip: hostNetwork ? (this.opts.hostIp ?? "") : this.ips.allocate(),
      ownsIp: !hostNetwork,
      startedAt: nowRfc3339(),
      containers: [
        ...(pod.spec?.initContainers ?? []).map((c) => newContainer(c.name, c.image, true)),
        ...(pod.spec?.containers ?? []).map((c) => newContainer(c.name, c.image)),
      ],
      ready: annotations[HOLLOW_ANNOTATIONS.ready] !== "false",
      failing: false,
      exitAfterMs: exitAfter !== undefined && Number.isFinite(Number(exitAfter)) ? Number(exitAfter) : undefined,
      exitCode: Number(annotations[HOLLOW_ANNOTATIONS.exitCode] ?? 0) || 0,
      initExitCode: Number(annotations[HOLLOW_ANNOTATIONS.initExitCode] ?? 0) || 0,
    };
    // With init containers nothing starts here: the agent starts them in turn (startContainer).
    if (hp.containers.some((c) => c.init)) for (const c of hp.containers) c.state = "pending";
    this.pods.set(uid, hp);
    // In a slot shared with every pod of the process due then: their status writes and Started Events leave in one socket write.
    await new Promise<void>((r) => slottedTimeout(r, this.startDelayMs, HOLLOW_START_SLOT_MS));
    if (this.pods.get(uid) !== hp) throw new Error(`pod ${uid} was stopped while starting`);
    for (const c of hp.containers) if (c.state !== "pending") this.run(hp, c);
    return this.statusOf(hp);
  }

  async stopPod(pod: RuntimePod, _gracePeriodSeconds: number): Promise<void> {
    const hp = this.pods.get(pod.uid);
    if (!hp) return;
    for (const c of hp.containers) clearTimeout(c.timer);
    if (hp.ownsIp) this.ips.release(hp.ip);
    this.pods.delete(pod.uid);
  }

  async restartContainer(uid: string, container: string): Promise<void> {
    const hp = this.pods.get(uid);
    const c = hp?.containers.find((x) => x.name === container);
    if (!hp || !c || c.state !== "terminated") return;
    c.last = terminatedState(uid, c);
    c.restartCount++;
    this.run(hp, c);
  }

  async startContainer(uid: string, container: string): Promise<void> {
    const hp = this.pods.get(uid);
    const c = hp?.containers.find((x) => x.name === container);
    if (hp && c?.state === "pending") this.run(hp, c);
  }

  async startEphemeralContainer(pod: Pod, container: EphemeralContainer): Promise<void> {
    const hp = this.pods.get(pod.metadata?.uid ?? "");
    if (!hp || hp.containers.some((x) => x.name === container.name)) return;
    const c = { ...newContainer(container.name, container.image), ephemeral: true };
    Object.assign(c, { state: "running", startedAt: nowRfc3339() });
    c.log.push(`${nowRfc3339Nano()} hollow container ${c.name} started (run 0)`);
    hp.containers.push(c);
    this.emit(hp);
  }

  async killContainer(uid: string, container: string, _gracePeriodSeconds: number): Promise<void> {
    const hp = this.pods.get(uid);
    const c = hp?.containers.find((x) => x.name === container);
    if (!hp || !c || c.state !== "running") return;
    this.terminate(hp, c, 137);
    this.emit(hp);
  }

  async exec(uid: string, container: string, command: readonly string[], _timeoutMs: number): Promise<ExecResult> {
    const c = this.pods.get(uid)?.containers.find((x) => x.name === container);
    if (!c || c.state !== "running") throw new RuntimeRequestError(`container ${container} is not running`);
    // A hollow container runs nothing; `true` and `false` behave, anything else succeeds.
    return { exitCode: command[0] === "false" ? 1 : 0, output: "" };
  }

  async *logs(uid: string, opts: LogOptions, signal: AbortSignal): AsyncIterable<Uint8Array> {
    const hp = this.pods.get(uid);
    const c = hp?.containers.find((x) => x.name === opts.container);
    if (!hp || !c) throw new RuntimeRequestError(`container "${opts.container}" in pod is not running on this node`);
    if (opts.previous && c.restartCount === 0) throw RuntimeRequestError.noPrevious(opts.container, hp.ref.name);
    const since = opts.sinceSeconds !== undefined ? Date.now() - opts.sinceSeconds * 1000 : -Infinity;
    const render = (line: string): string => {
      const [ts, text] = [line.slice(0, line.indexOf(" ")), line.slice(line.indexOf(" ") + 1)];
      return opts.timestamps ? `${ts} ${text}\n` : `${text}\n`;
    };
    let lines = c.log.filter((l) => Date.parse(l.slice(0, l.indexOf(" "))) >= since);
    if (opts.tailLines !== undefined) lines = lines.slice(Math.max(0, lines.length - opts.tailLines));
    if (lines.length > 0) yield Buffer.from(lines.map(render).join(""));
    if (!opts.follow) return;
    let seen = c.log.length;
    while (!signal.aborted && this.pods.get(uid) === hp) {
      if (!(await sleep(100, signal))) break;
      if (c.log.length > seen) {
        yield Buffer.from(c.log.slice(seen).map(render).join(""));
        seen = c.log.length;
      }
    }
  }

  async adoptPod(pod: Pod): Promise<PodRuntimeStatus | undefined> {
    const meta = pod.metadata;
    const st = pod.status;
    if (!meta || st?.phase !== "Running" || !st.podIp || st.containerStatuses.length === 0) return undefined;
    const existing = this.pods.get(meta.uid);
    if (existing) return this.statusOf(existing);
    const annotations = meta.annotations;
    const exitAfter = annotations[HOLLOW_ANNOTATIONS.exitAfterMs];
    const hp: HollowPod = {
      ref: { uid: meta.uid, namespace: meta.namespace, name: meta.name },
      ip: st.podIp,
      ownsIp: this.ips.reserve(st.podIp),
      startedAt: st.startTime || nowRfc3339(),
      containers: [],
      ready: annotations[HOLLOW_ANNOTATIONS.ready] !== "false",
      failing: false,
      exitAfterMs: exitAfter !== undefined && Number.isFinite(Number(exitAfter)) ? Number(exitAfter) : undefined,
      exitCode: Number(annotations[HOLLOW_ANNOTATIONS.exitCode] ?? 0) || 0,
      initExitCode: Number(annotations[HOLLOW_ANNOTATIONS.initExitCode] ?? 0) || 0,
    };
    // A Running pod is initialized: its init containers completed and never run again.
    for (const spec of pod.spec?.initContainers ?? []) {
      const cs = st.initContainerStatuses.find((x) => x.name === spec.name);
      const c = newContainer(spec.name, spec.image, true);
      const term = cs?.state?.terminated;
      Object.assign(c, { state: "terminated", restartCount: cs?.restartCount ?? 0, startedAt: term?.startedAt ?? "", finishedAt: term?.finishedAt ?? "" });
      hp.containers.push(c);
    }
    for (const spec of pod.spec?.containers ?? []) {
      const cs = st.containerStatuses.find((x) => x.name === spec.name);
      const c = newContainer(spec.name, spec.image);
      c.restartCount = cs?.restartCount ?? 0;
      c.last = cs?.lastState?.terminated;
      const term = cs?.state?.terminated ?? (cs?.state?.waiting ? cs.lastState?.terminated : undefined);
      if (cs?.state?.running) {
        c.state = "running";
        c.startedAt = cs.state.running.startedAt;
        c.ready = cs.ready;
        this.scheduleExit(hp, c);
      } else if (term) {
        Object.assign(c, { state: "terminated", startedAt: term.startedAt, finishedAt: term.finishedAt, exitCode: term.exitCode });
        if (cs?.state?.waiting) c.last = undefined; // the waiting state's last run is this terminated run
      } else {
        this.run(hp, c);
      }
      hp.containers.push(c);
    }
    this.pods.set(meta.uid, hp);
    return this.statusOf(hp);
  }

  podStatus(uid: string): PodRuntimeStatus | undefined {
    const hp = this.pods.get(uid);
    return hp ? this.statusOf(hp) : undefined;
  }

  listPods(): RuntimePod[] {
    return [...this.pods.values()].map((p) => ({ ...p.ref }));
  }

  findPod(namespace: string, name: string): RuntimePod | undefined {
    for (const p of this.pods.values()) if (p.ref.name === name && p.ref.namespace === namespace) return { ...p.ref };
    return undefined;
  }

  onChange(listener: RuntimeListener): void {
    this.listeners.push(listener);
  }

  async close(): Promise<void> {
    for (const hp of this.pods.values()) for (const c of hp.containers) clearTimeout(c.timer);
    this.pods.clear();
  }

  // --- test controls -------------------------------------------------------

  /** The pod's containers exit 1, and so does every restart (a crash loop; Never → Failed). */
  fail(uid: string): void {
    const hp = this.mustGet(uid);
    hp.failing = true;
    for (const c of hp.containers) if (c.state === "running") this.terminate(hp, c, 1);
    this.emit(hp);
  }

  /** The pod's containers exit 1 once; a restart runs normally. */
  crash(uid: string): void {
    const hp = this.mustGet(uid);
    for (const c of hp.containers) if (c.state === "running") this.terminate(hp, c, 1);
    this.emit(hp);
  }

  /** The pod's containers exit with `exitCode` (0: they completed). */
  complete(uid: string, exitCode = 0): void {
    const hp = this.mustGet(uid);
    for (const c of hp.containers) if (c.state === "running") this.terminate(hp, c, exitCode);
    this.emit(hp);
  }

  /** Turns the pod's running containers ready or unready. */
  setReady(uid: string, ready: boolean): void {
    const hp = this.mustGet(uid);
    hp.ready = ready;
    for (const c of hp.containers) if (c.state === "running") c.ready = ready;
    this.emit(hp);
  }

  /** Whether the runtime holds `uid` (tests). */
  has(uid: string): boolean {
    return this.pods.has(uid);
  }

  // --- internals -----------------------------------------------------------

  private mustGet(uid: string): HollowPod {
    const hp = this.pods.get(uid);
    if (!hp) throw new Error(`hollow runtime has no pod ${uid}`);
    return hp;
  }

  private run(hp: HollowPod, c: HollowContainer): void {
    Object.assign(c, { state: "running", startedAt: nowRfc3339(), finishedAt: "", exitCode: 0, ready: hp.ready && !c.init });
    c.log.push(`${nowRfc3339Nano()} hollow container ${c.name} started (run ${c.restartCount})`);
    if (c.init && !hp.failing) {
      c.timer = setTimeout(() => this.exitOnItsOwn(hp, c, hp.initExitCode), this.startDelayMs);
      c.timer.unref();
    } else if (hp.failing) {
      c.timer = setTimeout(() => this.exitOnItsOwn(hp, c, 1), this.startDelayMs);
      c.timer.unref();
    } else {
      this.scheduleExit(hp, c);
    }
  }

  private scheduleExit(hp: HollowPod, c: HollowContainer): void {
    if (hp.exitAfterMs === undefined) return;
    c.timer = setTimeout(() => this.exitOnItsOwn(hp, c, hp.exitCode), hp.exitAfterMs);
    c.timer.unref();
  }

  private exitOnItsOwn(hp: HollowPod, c: HollowContainer, code: number): void {
    if (this.pods.get(hp.ref.uid) !== hp || c.state !== "running") return;
    this.terminate(hp, c, code);
    this.emit(hp);
  }

  private terminate(_hp: HollowPod, c: HollowContainer, code: number): void {
    clearTimeout(c.timer);
    c.timer = undefined;
    Object.assign(c, { state: "terminated", exitCode: code, finishedAt: nowRfc3339(), ready: false });
    c.log.push(`${nowRfc3339Nano()} hollow container ${c.name} exited with code ${code}`);
  }

  private emit(hp: HollowPod): void {
    for (const l of this.listeners) l({ ...hp.ref });
  }

  private statusOf(hp: HollowPod): PodRuntimeStatus {
    const status: PodRuntimeStatus = {
      uid: hp.ref.uid,
      podIp: hp.ip,
      startedAt: hp.startedAt,
      containerStatuses: hp.containers.filter((c) => !c.init && !c.ephemeral).map((c) => containerStatus(hp.ref.uid, c)),
    };
    const inits = hp.containers.filter((c) => c.init);
    if (inits.length > 0) status.initContainerStatuses = inits.map((c) => containerStatus(hp.ref.uid, c));
    const ephemeral = hp.containers.filter((c) => c.ephemeral);
    if (ephemeral.length > 0) status.ephemeralContainerStatuses = ephemeral.map((c) => containerStatus(hp.ref.uid, c));
    return status;
  }
}

/** Now as RFC 3339 with nanoseconds, as kubectl's --timestamps prints. */
function nowRfc3339Nano(): string {
  return `${new Date().toISOString().slice(0, -1)}000000Z`;
}

function newContainer(name: string, image: string, init = false): HollowContainer {
  return {
    name,
    init,
    image,
    log: [],
    state: "waiting",
    startedAt: "",
    finishedAt: "",
    exitCode: 0,
    restartCount: 0,
    ready: false,
    last: undefined,
    timer: undefined,
  };
}

function containerId(uid: string, c: HollowContainer): string {
  return `hollow://${uid}/${c.name}/${c.restartCount}`;
}

function terminatedState(uid: string, c: HollowContainer): ContainerStateTerminated {
  return {
    exitCode: c.exitCode,
    signal: 0,
    reason: c.exitCode === 0 ? "Completed" : "Error",
    message: "",
    startedAt: c.startedAt,
    finishedAt: c.finishedAt,
    containerId: containerId(uid, c),
  };
}

function containerStatus(uid: string, c: HollowContainer): ContainerStatus {
  const state =
    c.state === "running"
      ? { running: { startedAt: c.startedAt } }
      : c.state === "terminated"
        ? { terminated: terminatedState(uid, c) }
        : { waiting: { reason: c.state === "pending" ? POD_INITIALIZING : "ContainerCreating", message: "" } };
  return {
    name: c.name,
    state,
    lastState: c.last ? { terminated: c.last } : undefined,
    ready: c.ready,
    restartCount: c.restartCount,
    image: c.image,
    imageId: `hollow://${c.image}`,
    allocatedResources: {},
    volumeMounts: [],
    allocatedResourcesStatus: [],
    containerId: c.state === "waiting" || c.state === "pending" ? "" : containerId(uid, c),
    started: c.state === "running",
  };
}
