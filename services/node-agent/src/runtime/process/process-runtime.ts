import fs from "node:fs";
import path from "node:path";
import type { Container, EphemeralContainer, Pod } from "@choreo/kit/gen/choreo/core/v1/core";
import { nowRfc3339 } from "@choreo/kit/apimachinery";
import type { Logger } from "@choreo/kit/log";
import { DEFAULT_IMAGES_DIR } from "../../images/types.js";
import type { PodNetwork } from "../../net/types.js";
import { volumeBinds } from "../pod-spec.js";
import { bindTarget, bindWalked, walkedMounts } from "../safe-binds.js";
import { isUnsafePath } from "../safe-path.js";
import { ContainerConfigError, isContainerConfigError } from "../security-context.js";
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
import { Cgroups } from "./cgroups.js";
import { attachRun } from "./attach.js";
import { removeRunDirs, startRun, writeScripts } from "./container.js";
import { execIn, execStreamIn } from "./exec.js";
import { ensureHelper } from "./helper.js";
import { readLog, rotateIfNeeded } from "./logs.js";
import { containerLimits } from "./container-spec.js";
import { buildContainerSpec, loadSpec, storeSpec } from "./pod-builder.js";
import { alive, childrenOf, confined, signal, sleep } from "./proc.js";
import { createSandbox, destroySandbox, prepareNetnsDir, sandboxAlive, type SandboxEnv } from "./sandbox.js";
import { podPaths, readPodRecords, readRunExit, readRunPid, runPaths, writePodRecord, type PodRecord } from "./state.js";
import { containerStatus, terminated, unknownExit, type HeldContainer } from "./status.js";
import { POD_INITIALIZING } from "../../init-containers.js";

/** Options of {@link ProcessRuntime}. */
export interface ProcessRuntimeOptions {
  node: string;
  network: PodNetwork;
  /** Pods live in `<stateDir>/pods/<uid>`. */
  stateDir: string;
  imagesDir?: string;
  /** The nameserver written into pods' resolv.conf. */
  dnsServer: string;
  clusterDomain?: string;
  log: Logger;
  /** A container log is rotated past this size (default 10 MiB)… */
  logMaxBytes?: number;
  /** …keeping this many files, the current one included (default 5). */
  logMaxFiles?: number;
  /** The node's IP: hostNetwork pods' IP and `status.hostIP` (default: the network's gateway). */
  hostIp?: string;
  /** Where cgroups are mounted (default /sys/fs/cgroup). */
  cgroupRoot?: string;
  /** How often exits are polled for besides the state-dir watches (default 1000 ms). */
  pollMs?: number;
}

interface HeldPod {
  rec: PodRecord;
  containers: Map<string, HeldContainer>;
  /** Set by stopPod: no retried run starts any more. */
  stopping?: boolean;
  /** Retried starts under way (stopPod waits for them before it unmounts and removes the pod dir). */
  inflight?: Set<Promise<void>>;
}

/** Back-off of a run refused for its volume paths (the kubelet's: 1 s doubling to 5 min). */
const CONFIG_BACKOFF = { initialMs: 1000, maxMs: 300_000 };

/**
 * Containers as Linux processes in namespaces, no container engine. See
 * README.md beside this file for the process tree and the files.
 */
export class ProcessRuntime implements Runtime {
  readonly name = "process";
  readonly probes = true;
  private readonly pods = new Map<string, HeldPod>();
  private readonly listeners: RuntimeListener[] = [];
  private readonly cgroups: Cgroups;
  private readonly sandboxEnv: SandboxEnv;
  private readonly maxBytes: number;
  private readonly maxFiles: number;
  private poller: NodeJS.Timeout | undefined;

  constructor(private readonly o: ProcessRuntimeOptions) {
    this.cgroups = new Cgroups(o.cgroupRoot);
    this.sandboxEnv = {
      stateDir: o.stateDir,
      network: o.network,
      dnsServer: o.dnsServer,
      clusterDomain: o.clusterDomain,
      hostIp: o.hostIp ?? o.network.gateway,
    };
    this.maxBytes = o.logMaxBytes ?? 10 * 1024 * 1024;
    this.maxFiles = Math.max(1, o.logMaxFiles ?? 5);
  }

  async init(): Promise<void> {
    await this.o.network.init();
    await prepareNetnsDir(this.o.node);
    ensureHelper(); // every container's last step and every exec: fail here, not at the first pod
    fs.mkdirSync(path.join(this.o.stateDir, "pods"), { recursive: true });
    const { records, orphans } = readPodRecords(this.o.stateDir);
    for (const rec of records) {
      if (sandboxAlive(this.o.stateDir, rec.uid, rec.hostNetwork)) this.holdFound(rec);
      else await this.teardown(rec.uid, rec.ip, rec.hostNetwork); // the machine rebooted: start it again
    }
    // A pod dir without pod.json is a start the agent died in: nothing to adopt.
    for (const uid of orphans) await this.teardownLeftover(uid);
    this.poller ??= setInterval(() => this.poll(), this.o.pollMs ?? 1000);
    this.poller.unref();
    this.o.log.info({ node: this.o.node, pods: records.length, orphans: orphans.length, cgroupV2: this.cgroups.v2 }, "process runtime ready");
  }

  async startPod(pod: Pod): Promise<PodRuntimeStatus> {
    const meta = pod.metadata;
    const uid = meta?.uid ?? "";
    const held = this.pods.get(uid);
    if (held) return this.statusOf(held);
    if (fs.existsSync(podPaths(this.o.stateDir, uid).dir)) await this.teardownLeftover(uid);
    let ip = "";
    try {
      ip = await createSandbox(this.sandboxEnv, pod);
      const rec: PodRecord = {
        uid,
        namespace: meta?.namespace ?? "",
        name: meta?.name ?? "",
        ip,
        hostNetwork: Boolean(pod.spec?.hostNetwork),
        startedAt: nowRfc3339(),
        containers: [],
      };
      const hp: HeldPod = { rec, containers: new Map() };
      writePodRecord(this.o.stateDir, rec); // from here on a restarted agent finds the sandbox (and its IP) to free
      const inits = pod.spec?.initContainers ?? [];
      for (const c of [...inits, ...(pod.spec?.containers ?? [])]) {
        const hc = this.newContainer(pod, c, ip);
        if (inits.includes(c)) hc.rec.init = true;
        // A pod with init containers starts none here: the agent starts them in turn (startContainer).
        if (inits.length > 0) pendingRun(hc);
        else await this.runContainer(hp, hc, 0);
        hp.containers.set(c.name, hc);
        rec.containers.push(hc.rec);
      }
      writePodRecord(this.o.stateDir, rec);
      this.pods.set(uid, hp);
      for (const hc of hp.containers.values()) this.watch(hp, hc);
      this.o.log.info({ pod: `${rec.namespace}/${rec.name}`, uid, ip }, "pod started");
      return this.statusOf(hp);
    } catch (err) {
      this.o.log.warn({ uid, err }, "pod start failed; cleaning up");
      await this.teardown(uid, ip, Boolean(pod.spec?.hostNetwork));
      throw err;
    }
  }

  /** A container's record, spec and cgroup, before its first run. */
  private newContainer(pod: Pod, c: Container, ip: string, pidNamespace?: string): HeldContainer {
    const uid = pod.metadata?.uid ?? "";
    const facts = { podIp: ip, hostIp: this.sandboxEnv.hostIp, nodeName: this.o.node };
    const build = { node: this.o.node, stateDir: this.o.stateDir, imagesDir: this.o.imagesDir ?? DEFAULT_IMAGES_DIR, cgroups: this.cgroups };
    const podDir = podPaths(this.o.stateDir, uid).dir;
    // subPaths and hostPaths are bound from agent-private targets, bound afresh before each run (runContainer).
    const walked = walkedMounts(pod, c, podDir);
    const volumes = volumeBinds(pod, c, podDir);
    for (const m of walked) volumes[m.index] = { ...volumes[m.index]!, source: bindTarget(podDir, c.name, m) };
    const spec = { ...buildContainerSpec(build, pod, c, facts, volumes), ...(pidNamespace ? { pidNamespace } : {}) };
    const limits = containerLimits(c);
    this.cgroups.create(this.o.node, uid, c.name, limits);
    return {
      rec: {
        name: c.name,
        image: c.image,
        root: spec.lowerdir ? "image" : "host",
        restartCount: 0,
        shimPid: 0,
        shimStart: "",
        startedAt: "",
        spec: storeSpec(spec),
        volumes: walked,
        limits: { memoryBytes: limits.memoryBytes?.toString(), cpuMilli: limits.cpuMilli?.toString() },
      },
      exit: undefined,
      watcher: undefined,
    };
  }

  /**
   * An ephemeral container: a container of the pod's network, IPC and UTS
   * namespaces like the others, in the target's PID namespace when it names
   * one (entered through the target's PID 1), else in its own. Never restarted.
   */
  async startEphemeralContainer(pod: Pod, container: EphemeralContainer): Promise<void> {
    const hp = this.pods.get(pod.metadata?.uid ?? "");
    if (!hp || hp.stopping || hp.containers.has(container.name)) return;
    const { targetContainerName, ...c } = container;
    let pidNamespace: string | undefined;
    if (targetContainerName) {
      const target = hp.containers.get(targetContainerName);
      const init = target && !target.waiting && !target.exit ? readRunPid(target.rec.spec.dir, target.rec.restartCount) : undefined;
      if (!init || !alive(init.pid, init.start)) throw new Error(`target container "${targetContainerName}" of ephemeral container "${c.name}" is not running`);
      pidNamespace = `/proc/${init.pid}/ns/pid`;
    }
    const hc = this.newContainer(pod, c, hp.rec.ip, pidNamespace);
    hc.rec.ephemeral = true;
    hp.containers.set(c.name, hc);
    hp.rec.containers.push(hc.rec);
    await this.runContainer(hp, hc, 0);
    writePodRecord(this.o.stateDir, hp.rec);
    if (!hc.waiting) this.watch(hp, hc);
    this.emit(hp);
  }

  async stopPod(pod: RuntimePod, gracePeriodSeconds: number): Promise<void> {
    const hp = this.pods.get(pod.uid);
    if (!hp) {
      if (fs.existsSync(podPaths(this.o.stateDir, pod.uid).dir)) await this.teardownLeftover(pod.uid);
      return;
    }
    hp.stopping = true;
    await Promise.allSettled([...(hp.inflight ?? [])]);
    await Promise.all([...hp.containers.keys()].map((c) => this.killContainer(pod.uid, c, gracePeriodSeconds)));
    for (const hc of hp.containers.values()) hc.watcher?.close();
    this.pods.delete(pod.uid);
    await this.teardown(pod.uid, hp.rec.ip, hp.rec.hostNetwork, hp);
    this.o.log.info({ pod: `${hp.rec.namespace}/${hp.rec.name}`, uid: pod.uid }, "pod stopped");
  }

  async restartContainer(uid: string, container: string): Promise<void> {
    const hp = this.pods.get(uid);
    const hc = hp?.containers.get(container);
    if (!hp || !hc?.exit) return;
    const spec = loadSpec(hc.rec.spec);
    const prev = hc.rec.restartCount;
    hc.rec.last = terminated(uid, hc, hc.exit);
    removeRunDirs(spec.dir, prev);
    for (const f of fs.readdirSync(spec.dir)) if (f.startsWith(`${prev - 1}.`)) fs.rmSync(path.join(spec.dir, f), { recursive: true, force: true });
    const l = hc.rec.limits;
    this.cgroups.create(this.o.node, uid, container, {
      memoryBytes: l.memoryBytes !== undefined ? BigInt(l.memoryBytes) : undefined,
      cpuMilli: l.cpuMilli !== undefined ? BigInt(l.cpuMilli) : undefined,
    });
    hc.exit = undefined;
    await this.runContainer(hp, hc, prev + 1);
    writePodRecord(this.o.stateDir, hp.rec);
  }

  /**
   * Starts run `n` of a container: its subPaths and hostPaths walked and
   * bound afresh (a container of the pod may have swapped one for a
   * symlink since the last run), the scripts rewritten with what each
   * bound path is (file or directory), then the shim. A refused path
   * leaves the container waiting (CreateContainerConfigError) and `poll`
   * retries it with back-off; other failures throw.
   */
  private async runContainer(hp: HeldPod, hc: HeldContainer, n: number): Promise<void> {
    const spec = loadSpec(hc.rec.spec);
    let kinds: Map<number, boolean>;
    // While the binds are made, the run before must not be read as this one's end (checkExit).
    hc.starting = true;
    try {
      // The kubelet's checks of the securityContext (runAsNonRoot, what this runtime cannot give) before anything is made.
      if (spec.security?.configError) throw new ContainerConfigError(spec.security.configError);
      kinds = await bindWalked(podPaths(this.o.stateDir, hp.rec.uid).dir, hc.rec.name, hc.rec.volumes ?? []);
    } catch (err) {
      hc.starting = false;
      if (!isUnsafePath(err) && !isContainerConfigError(err)) throw err;
      this.o.log.warn({ pod: `${hp.rec.namespace}/${hp.rec.name}`, container: hc.rec.name, err: err.message }, "container config refused");
      const backoffMs = hc.waiting ? Math.min(CONFIG_BACKOFF.maxMs, hc.waiting.backoffMs * 2) : CONFIG_BACKOFF.initialMs;
      hc.waiting = { state: { reason: "CreateContainerConfigError", message: err.message }, backoffMs, retryAt: Date.now() + backoffMs, retrying: false };
      Object.assign(hc.rec, { restartCount: n, shimPid: 0, shimStart: "", startedAt: "" });
      return;
    }
    hc.starting = false;
    const binds = spec.binds.map((b, i) => (kinds.has(i) ? { ...b, file: !kinds.get(i) } : b));
    const fresh = { ...spec, binds };
    hc.rec.spec = storeSpec(fresh);
    writeScripts(fresh);
    Object.assign(hc.rec, { restartCount: n, ...startRun(fresh, n) });
    hc.waiting = undefined;
  }

  /** Retries a run refused for its volume paths (from `poll`), and tells the listeners when it started. */
  private retryRun(hp: HeldPod, hc: HeldContainer): void {
    const w = hc.waiting;
    if (!w || w.retrying || hp.stopping || Date.now() < w.retryAt) return;
    w.retrying = true;
    const work = this.runContainer(hp, hc, hc.rec.restartCount)
      .then(
        () => {
          if (hc.waiting) return;
          writePodRecord(this.o.stateDir, hp.rec);
          this.watch(hp, hc);
          this.emit(hp);
        },
        (err: unknown) => {
          this.o.log.warn({ pod: `${hp.rec.namespace}/${hp.rec.name}`, container: hc.rec.name, err }, "container start failed");
          w.retryAt = Date.now() + w.backoffMs;
        },
      )
      .finally(() => {
        w.retrying = false;
        hp.inflight?.delete(work);
      });
    (hp.inflight ??= new Set()).add(work);
  }

  async startContainer(uid: string, container: string): Promise<void> {
    const hp = this.pods.get(uid);
    const hc = hp?.containers.get(container);
    if (!hp || !hc?.rec.pending || hp.stopping) return;
    hc.rec.pending = undefined;
    hc.waiting = undefined;
    await this.runContainer(hp, hc, 0);
    writePodRecord(this.o.stateDir, hp.rec);
    if (!hc.waiting) this.watch(hp, hc);
  }

  async killContainer(uid: string, container: string, gracePeriodSeconds: number): Promise<void> {
    const hp = this.pods.get(uid);
    const hc = hp?.containers.get(container);
    if (!hp || !hc || hc.waiting || this.checkExit(hp, hc)) return;
    const init = await this.initOf(hp, hc, 2000);
    if (init) signal(init.pid, "SIGTERM");
    if (await this.waitExit(hp, hc, gracePeriodSeconds * 1000)) return;
    // SIGKILL to a pid namespace's PID 1 takes the whole namespace with it.
    if (init && alive(init.pid, init.start)) signal(init.pid, "SIGKILL");
    if (await this.waitExit(hp, hc, 5000)) return;
    if (alive(hc.rec.shimPid, hc.rec.shimStart)) signal(-hc.rec.shimPid, "SIGKILL");
    if (!(await this.waitExit(hp, hc, 2000))) this.setExit(hp, hc, unknownExit());
  }

  async adoptPod(pod: Pod): Promise<PodRuntimeStatus | undefined> {
    const hp = this.pods.get(pod.metadata?.uid ?? "");
    return hp ? this.statusOf(hp) : undefined;
  }

  podStatus(uid: string): PodRuntimeStatus | undefined {
    const hp = this.pods.get(uid);
    return hp ? this.statusOf(hp) : undefined;
  }

  listPods(): RuntimePod[] {
    return [...this.pods.values()].map(({ rec }) => ({ uid: rec.uid, namespace: rec.namespace, name: rec.name }));
  }

  async exec(uid: string, container: string, command: readonly string[], timeoutMs: number): Promise<ExecResult> {
    const { main, spec } = await this.joinable(uid, container);
    return execIn(main, spec, command, timeoutMs);
  }

  async execStream(uid: string, container: string, command: readonly string[], opts: StreamOptions): Promise<StreamSession> {
    const { main, spec } = await this.joinable(uid, container);
    return execStreamIn(main, spec, command, opts);
  }

  /** Attaches to a running container's current run (no tty: a tty container is refused with a 400). */
  async attach(uid: string, container: string, opts: StreamOptions): Promise<StreamSession> {
    const { hp, hc } = this.mustGet(uid, container);
    const spec = hc.rec.spec;
    if (spec.tty || opts.tty) throw new RuntimeRequestError("attach to a tty container is not supported by the process runtime");
    await this.joinable(uid, container);
    const n = hc.rec.restartCount;
    const running = (): boolean => hc.rec.restartCount === n && !this.checkExit(hp, hc);
    return attachRun({ dir: spec.dir, n, maxFiles: this.maxFiles, stdin: spec.stdin === true, stdinOnce: spec.stdinOnce === true, running }, opts);
  }

  /** The host pid of a running container's command (what an exec joins) and its spec; a RuntimeRequestError when not running. */
  private async joinable(uid: string, container: string): Promise<{ main: number; spec: HeldContainer["rec"]["spec"] }> {
    const { hp, hc } = this.mustGet(uid, container);
    if (hc.waiting) throw new RuntimeRequestError(`container ${container} is not running: ${hc.waiting.state.reason}`);
    // Right after a start the command may not be confined in its root yet: give it a moment.
    let main = this.processes(uid, container)?.mainPid;
    for (let i = 0; i < 100 && !main && !this.checkExit(hp, hc); i++) {
      await sleep(10);
      main = this.processes(uid, container)?.mainPid;
    }
    if (!main || hc.exit) throw new RuntimeRequestError(`container ${container} is not running`);
    return { main, spec: hc.rec.spec };
  }

  logs(uid: string, opts: LogOptions, signal: AbortSignal): AsyncIterable<Uint8Array> {
    const { hp, hc } = this.mustGet(uid, opts.container);
    if (hc.waiting && !opts.previous) {
      throw new RuntimeRequestError(`container "${opts.container}" in pod "${hp.rec.name}" is waiting to start: ${hc.waiting.state.reason}`);
    }
    const n = opts.previous ? hc.rec.restartCount - 1 : hc.rec.restartCount;
    const log = runPaths(hc.rec.spec.dir, n).log;
    if (opts.previous && (n < 0 || !fs.existsSync(log))) {
      throw RuntimeRequestError.noPrevious(opts.container, hp.rec.name);
    }
    const running = (): boolean => !opts.previous && hc.rec.restartCount === n && !this.checkExit(hp, hc);
    return readLog(log, this.maxFiles, { ...opts, running }, signal);
  }

  onChange(listener: RuntimeListener): void {
    this.listeners.push(listener);
  }

  async close(): Promise<void> {
    clearInterval(this.poller);
    this.poller = undefined;
    for (const hp of this.pods.values()) for (const hc of hp.containers.values()) hc.watcher?.close();
    this.pods.clear();
  }

  /** The host pids of a container's current run: shim, PID 1 of its pid namespace, the command (tests, exec). */
  processes(uid: string, container: string): { shimPid: number; initPid: number | undefined; mainPid: number | undefined } | undefined {
    const hc = this.pods.get(uid)?.containers.get(container);
    if (!hc) return undefined;
    const init = readRunPid(hc.rec.spec.dir, hc.rec.restartCount);
    const live = init && alive(init.pid, init.start) ? init.pid : undefined;
    const main = live ? childrenOf(live)[0] : undefined;
    return { shimPid: hc.rec.shimPid, initPid: live, mainPid: main !== undefined && confined(main) ? main : undefined };
  }

  // --- internals -----------------------------------------------------------

  private mustGet(uid: string, container: string): { hp: HeldPod; hc: HeldContainer } {
    const hp = this.pods.get(uid);
    if (!hp) throw RuntimeRequestError.noPod(uid, this.o.node);
    const hc = hp.containers.get(container);
    if (!hc) throw RuntimeRequestError.noContainer(container, hp.rec.name);
    return { hp, hc };
  }

  /** Takes over a pod found on disk: running runs are watched, ended ones report their recorded exit. */
  private holdFound(rec: PodRecord): void {
    const hp: HeldPod = { rec, containers: new Map() };
    if (!rec.hostNetwork && rec.ip) this.o.network.reserve(rec.ip);
    for (const c of rec.containers) hp.containers.set(c.name, { rec: c, exit: undefined, watcher: undefined });
    this.pods.set(rec.uid, hp);
    for (const hc of hp.containers.values()) {
      if (hc.rec.pending)
        pendingRun(hc); // its turn had not come when the agent went
      else if (!this.checkExit(hp, hc, false)) this.watch(hp, hc);
    }
  }

  private watch(hp: HeldPod, hc: HeldContainer): void {
    hc.watcher?.close();
    try {
      hc.watcher = fs.watch(hc.rec.spec.dir, (_ev, file) => {
        if (file === `${hc.rec.restartCount}.exit`) this.checkExit(hp, hc);
      });
      hc.watcher.on("error", () => hc.watcher?.close());
    } catch {
      hc.watcher = undefined; // the poll still sees the exit
    }
  }

  /**
   * Whether the container's current run has ended: its exit file, or its
   * shim and PID 1 both gone without one. Records and announces a new end.
   */
  private checkExit(hp: HeldPod, hc: HeldContainer, emit = true): boolean {
    if (hc.exit) return true;
    if (hc.waiting || hc.starting) return false; // no run to end: it never started, or is starting

    const dir = hc.rec.spec.dir;
    const n = hc.rec.restartCount;
    let exit = readRunExit(dir, n);
    if (!exit && !alive(hc.rec.shimPid, hc.rec.shimStart)) {
      const init = readRunPid(dir, n);
      if (!init || !alive(init.pid, init.start)) exit = readRunExit(dir, n) ?? unknownExit();
    }
    if (!exit) return false;
    this.setExit(hp, hc, exit, emit);
    return true;
  }

  private setExit(hp: HeldPod, hc: HeldContainer, exit: HeldContainer["exit"], emit = true): void {
    hc.exit = exit;
    this.o.log.info({ pod: `${hp.rec.namespace}/${hp.rec.name}`, container: hc.rec.name, exitCode: exit?.exitCode, reason: exit?.reason }, "container exited");
    if (emit) this.emit(hp);
  }

  /** Tells the listeners the pod changed, while the runtime holds it. */
  private emit(hp: HeldPod): void {
    if (this.pods.get(hp.rec.uid) === hp) for (const l of this.listeners) l({ uid: hp.rec.uid, namespace: hp.rec.namespace, name: hp.rec.name });
  }

  private async waitExit(hp: HeldPod, hc: HeldContainer, ms: number): Promise<boolean> {
    const deadline = Date.now() + ms;
    while (!this.checkExit(hp, hc)) {
      if (Date.now() >= deadline) return false;
      await sleep(Math.min(20, Math.max(1, deadline - Date.now())));
    }
    return true;
  }

  /** PID 1 of the current run, waiting up to `ms` for its init step to record it. */
  private async initOf(hp: HeldPod, hc: HeldContainer, ms: number): Promise<{ pid: number; start: string } | undefined> {
    const deadline = Date.now() + ms;
    for (;;) {
      const init = readRunPid(hc.rec.spec.dir, hc.rec.restartCount);
      if (init && alive(init.pid, init.start)) return init;
      if (this.checkExit(hp, hc) || Date.now() >= deadline) return undefined;
      await sleep(5);
    }
  }

  private poll(): void {
    for (const hp of this.pods.values()) {
      for (const hc of hp.containers.values()) {
        if (hc.waiting) {
          this.retryRun(hp, hc);
          continue;
        }
        if (this.checkExit(hp, hc)) continue;
        try {
          rotateIfNeeded(runPaths(hc.rec.spec.dir, hc.rec.restartCount).log, this.maxBytes, this.maxFiles);
        } catch (err) {
          this.o.log.warn({ uid: hp.rec.uid, container: hc.rec.name, err }, "log rotation failed");
        }
      }
    }
  }

  /** Kills what is left of a pod (its cgroups' processes, its shims' groups), then frees its sandbox and cgroups. */
  private async teardown(uid: string, ip: string, hostNetwork: boolean, hp?: HeldPod): Promise<void> {
    for (const hc of hp?.containers.values() ?? []) if (alive(hc.rec.shimPid, hc.rec.shimStart)) signal(-hc.rec.shimPid, "SIGKILL");
    for (let i = 0; i < 100 && this.cgroups.killPod(this.o.node, uid) > 0; i++) await sleep(10);
    // A killed process takes a moment to be gone; the sandbox goes after its processes.
    for (const hc of hp?.containers.values() ?? []) for (let i = 0; i < 100 && alive(hc.rec.shimPid, hc.rec.shimStart); i++) await sleep(10);
    await destroySandbox(this.sandboxEnv, uid, ip, hostNetwork);
    this.cgroups.removePod(this.o.node, uid);
  }

  /** Tears down a pod dir the runtime does not hold, with the IP its record (if any) names. */
  private async teardownLeftover(uid: string): Promise<void> {
    let rec: Partial<PodRecord> = {};
    try {
      rec = JSON.parse(fs.readFileSync(podPaths(this.o.stateDir, uid).record, "utf8")) as PodRecord;
    } catch {
      // no record: a start that died before its sandbox had an IP
    }
    await this.teardown(uid, rec.ip ?? "", rec.hostNetwork ?? false);
  }

  private statusOf(hp: HeldPod): PodRuntimeStatus {
    const held = [...hp.containers.values()];
    const status: PodRuntimeStatus = {
      uid: hp.rec.uid,
      podIp: hp.rec.ip,
      startedAt: hp.rec.startedAt,
      containerStatuses: held.filter((hc) => !hc.rec.init && !hc.rec.ephemeral).map((hc) => containerStatus(hp.rec.uid, hc)),
    };
    if (held.some((hc) => hc.rec.init)) status.initContainerStatuses = held.filter((hc) => hc.rec.init).map((hc) => containerStatus(hp.rec.uid, hc));
    const ephemeral = held.filter((hc) => hc.rec.ephemeral);
    if (ephemeral.length > 0) status.ephemeralContainerStatuses = ephemeral.map((hc) => containerStatus(hp.rec.uid, hc));
    return status;
  }
}

/** A container whose first run waits for the agent (its init containers first): waiting PodInitializing, never retried by `poll`. */
function pendingRun(hc: HeldContainer): void {
  hc.rec.pending = true;
  hc.waiting = { state: { reason: POD_INITIALIZING, message: "" }, backoffMs: 0, retryAt: Infinity, retrying: false };
}
