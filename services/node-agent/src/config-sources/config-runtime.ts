import fs from "node:fs";
import path from "node:path";
import type { NatsConnection, Subscription } from "@nats-io/transport-node";
import { keyOf } from "@choreo/kit";
import { noticeFilter, NOTICE_RESOURCES, untoken } from "@choreo/kit/bus";
import { nowRfc3339 } from "@choreo/kit/apimachinery";
import type { ApiClient } from "@choreo/kit/client";
import { objectRef, type EventRecorder } from "@choreo/kit/events";
import { ContainerStatus, type Pod, type ServiceAccountTokenProjection } from "@choreo/kit/gen/choreo/core/v1/core";
import type { Logger } from "@choreo/kit/log";
import { configVolumePath, isConfigVolume } from "../runtime/pod-spec.js";
import { findHeld, type PodRuntimeStatus, type Runtime, type RuntimeListener, type RuntimePod } from "../runtime/runtime.js";
import { apiLookup } from "./api-lookup.js";
import { KubernetesEnv, withEnv } from "./kubernetes-env.js";
import { PodTokens } from "./pod-tokens.js";
import { writeAtomic } from "./atomic-writer.js";
import { ConfigError, needsResolution, resolvePod, volumePayload, type Allocatable, type Lookup, type Payload } from "./resolve.js";

/** What {@link withConfigSources} needs. */
export interface ConfigSourcesDeps {
  client: ApiClient;
  /** The agent's cache of its pods, by key (fresh labels for downwardAPI files). */
  pods: { get(key: string): Pod | undefined };
  /** A real node's state dir: volumes written to `<stateDir>/config-volumes/<uid>/<volume>`; none (hollow): resolved, not written. */
  stateDir?: string | undefined;
  allocatable: Allocatable;
  events?: Pick<EventRecorder, "emit"> | undefined;
  log: Logger;
  /** Waiting pods are retried, and mounted files refreshed, this often (default 10 s). */
  resyncMs?: number | undefined;
  /**
   * Where ConfigMap and Secret changes are published (the event log's
   * subjects): a change in a namespace with waiting or mounted pods
   * brings the resync forward. Only the subject is read (a Secret's
   * payload is sealed); the objects are fetched through the api.
   */
  nc?: NatsConnection | undefined;
  /** The lookup of a namespace (default: through the api client). */
  lookup?: (namespace: string) => Lookup;
}

/** A pod that cannot start yet: what it waits for, as a runtime status the agent reports. */
interface Waiting {
  pod: Pod;
  status: PodRuntimeStatus;
  message: string;
}

/**
 * The runtime `inner` with ConfigMaps, Secrets and the downward API
 * delivered, as the kubelet does before it creates containers: `startPod`
 * resolves the pod's references through the api, writes its config
 * volumes (atomic-writer.ts) and starts the pod with literal env values in
 * place of the references. Something missing and not optional: nothing
 * starts; the pod is held as waiting (CreateContainerConfigError, or
 * ContainerCreating with a FailedMount event for a volume), retried every
 * `resyncMs` and started when it resolves (the agent hears of it through
 * `onChange`). Started pods' config volumes are rewritten when their
 * sources change (same period); they are removed when the pod goes.
 * Every other call goes to `inner`.
 */
export function withConfigSources(inner: Runtime, d: ConfigSourcesDeps): Runtime {
  const cs = new ConfigSources(inner, d);
  // Methods, not arrow functions in properties: thousands of hollow nodes each make this table, and under tsx
  // (esbuild keepNames) every arrow function assigned to a property gets a `name` property array of its own (~260 B).
  const own: Partial<Record<keyof Runtime | "startContainer", unknown>> = {
    init() {
      return cs.init();
    },
    async startPod(pod: Pod) {
      return cs.startPod(await cs.withKubernetesEnv(pod));
    },
    stopPod(pod: RuntimePod, grace: number) {
      return cs.stopPod(pod, grace);
    },
    async adoptPod(pod: Pod) {
      return cs.adoptPod(await cs.withKubernetesEnv(pod));
    },
    podStatus(uid: string) {
      return cs.waiting.get(uid)?.status ?? inner.podStatus(uid);
    },
    listPods() {
      return cs.listPods();
    },
    findPod(namespace: string, name: string) {
      return cs.findPod(namespace, name);
    },
    restartContainer(uid: string, c: string) {
      return cs.waiting.has(uid) ? Promise.resolve() : inner.restartContainer(uid, c);
    },
    startContainer(uid: string, c: string) {
      return cs.startContainer(uid, c);
    },
    onChange(l: RuntimeListener) {
      cs.listeners.push(l);
      inner.onChange(l);
    },
    close() {
      return cs.close();
    },
  };
  return new Proxy(inner, {
    get(target, prop) {
      if (typeof prop === "string" && prop in own) return own[prop as keyof typeof own];
      const v: unknown = Reflect.get(target, prop, target);
      return typeof v === "function" ? (v as (...a: unknown[]) => unknown).bind(target) : v;
    },
  });
}

class ConfigSources {
  readonly waiting = new Map<string, Waiting>();
  readonly listeners: RuntimeListener[] = [];
  /** Started pods with config volumes: refreshed each period. */
  private readonly mounted = new Map<string, Pod>();
  /** Uids being started or stopped: one call per pod at a time (the timer too). */
  private readonly busy = new Map<string, Promise<unknown>>();
  private timer: NodeJS.Timeout | undefined;
  private syncing = false;
  /** A resync asked for while one ran: run again after it. */
  private again = false;
  private subs: Subscription[] = [];
  /** Pods' projected ServiceAccount tokens, asked of the api (createToken) when due; refreshed by the resync. */
  private readonly tokens: PodTokens;
  /** KUBERNETES_SERVICE_HOST and the rest, from the `kubernetes` Service in default. */
  private readonly kubernetesEnv: KubernetesEnv;

  constructor(
    private readonly inner: Runtime,
    private readonly d: ConfigSourcesDeps,
  ) {
    this.tokens = new PodTokens((ns, sa, req) => d.client.createToken(ns, sa, req));
    this.kubernetesEnv = new KubernetesEnv(d.client, d.log);
  }

  /** `pod` with the `kubernetes` Service's variables before each container's env (the kubelet adds them to every container). */
  async withKubernetesEnv(pod: Pod): Promise<Pod> {
    // Hollow nodes run nothing: no read of the Service for them (thousands of nodes per process).
    if (!this.d.stateDir) return pod;
    return withEnv(pod, await this.kubernetesEnv.current());
  }

  async init(): Promise<void> {
    await this.inner.init();
    this.timer ??= setInterval(() => void this.resync(), this.d.resyncMs ?? 10_000);
    this.timer.unref();
    // Real nodes only: hollow ones (thousands per process, nothing mounted) keep to the period.
    if (this.d.nc && this.d.stateDir && this.subs.length === 0)
      for (const resource of NOTICE_RESOURCES)
        this.subs.push(this.d.nc.subscribe(noticeFilter(resource), { callback: (_err, msg) => this.changed(msg.subject) }));
  }

  async close(): Promise<void> {
    clearInterval(this.timer);
    this.timer = undefined;
    for (const s of this.subs) s.unsubscribe();
    this.subs = [];
    await this.inner.close();
  }

  listPods(): RuntimePod[] {
    const held = this.inner.listPods();
    const uids = new Set(held.map((p) => p.uid));
    for (const w of this.waiting.values()) {
      const m = w.pod.metadata!;
      if (!uids.has(m.uid)) held.push({ uid: m.uid, namespace: m.namespace, name: m.name });
    }
    return held;
  }

  /** The first pod `listPods` names `namespace/name`: the inner runtime's, else a waiting one. */
  findPod(namespace: string, name: string): RuntimePod | undefined {
    const held = findHeld(this.inner, namespace, name);
    if (held) return held;
    for (const w of this.waiting.values()) {
      const m = w.pod.metadata!;
      if (m.namespace === namespace && m.name === name) return { uid: m.uid, namespace: m.namespace, name: m.name };
    }
    return undefined;
  }

  startPod(pod: Pod): Promise<PodRuntimeStatus> {
    if (!needsResolution(pod)) return this.inner.startPod(pod);
    return this.serial(pod.metadata?.uid ?? "", () => this.tryStart(pod));
  }

  async startContainer(uid: string, container: string): Promise<void> {
    if (this.waiting.has(uid)) return;
    const start = (this.inner as { startContainer?: (uid: string, c: string) => Promise<void> }).startContainer;
    await start?.call(this.inner, uid, container);
  }

  async adoptPod(pod: Pod): Promise<PodRuntimeStatus | undefined> {
    const uid = pod.metadata?.uid ?? "";
    const w = this.waiting.get(uid);
    if (w) return w.status;
    if (!needsResolution(pod)) return this.inner.adoptPod(pod);
    // Restarts of an adopted pod's containers need the resolved env; if it no longer resolves, the spec as it is.
    const resolved = await resolvePod(pod, this.lookup(pod), this.d.allocatable).catch(() => undefined);
    const rt = await this.inner.adoptPod(resolved?.pod ?? pod);
    if (rt && pod.spec?.volumes.some(isConfigVolume)) this.mounted.set(uid, pod);
    return rt;
  }

  async stopPod(pod: RuntimePod, grace: number): Promise<void> {
    await this.serial(pod.uid, async () => {
      this.waiting.delete(pod.uid);
      this.mounted.delete(pod.uid);
      this.tokens.forget(pod.uid);
      await this.inner.stopPod(pod, grace);
      if (this.d.stateDir) fs.rmSync(this.podVolumesDir(pod.uid), { recursive: true, force: true });
    });
  }

  private lookup(pod: Pod): Lookup {
    const ns = pod.metadata?.namespace ?? "";
    // Hollow nodes write nothing: their pods' tokens are not asked for (thousands of pods per process).
    const token = this.d.stateDir ? (p: Pod, src: ServiceAccountTokenProjection) => this.tokens.token(p, src) : () => Promise.resolve("");
    return this.d.lookup ? this.d.lookup(ns) : apiLookup(this.d.client, ns, token);
  }

  /** `<stateDir>/config-volumes/<uid>` (0700: secrets' files are not for the node's other users). */
  private podVolumesDir(uid: string): string {
    return path.dirname(this.volumeDir(uid, "x"));
  }

  private volumeDir(uid: string, volume: string): string {
    return configVolumePath(path.join(this.d.stateDir ?? "", "pods", uid), volume);
  }

  private writeVolumes(uid: string, volumes: ReadonlyMap<string, Payload>): void {
    if (!this.d.stateDir || volumes.size === 0) return;
    const dir = this.podVolumesDir(uid);
    fs.mkdirSync(path.dirname(dir), { recursive: true, mode: 0o700 });
    fs.mkdirSync(dir, { recursive: true, mode: 0o700 });
    fs.chmodSync(dir, 0o700);
    for (const [name, payload] of volumes) writeAtomic(this.volumeDir(uid, name), payload);
  }

  /** Resolves and starts the pod, or holds it as waiting. Other errors (the api unreachable) are thrown: the agent retries. */
  private async tryStart(pod: Pod): Promise<PodRuntimeStatus> {
    const m = pod.metadata!;
    let resolved;
    try {
      resolved = await resolvePod(pod, this.lookup(pod), this.d.allocatable);
    } catch (err) {
      if (!(err instanceof ConfigError)) throw err;
      return this.hold(pod, err);
    }
    this.waiting.delete(m.uid);
    for (const w of resolved.warnings) this.d.events?.emit(objectRef("Pod", "v1", pod), "Warning", "InvalidEnvironmentVariableNames", w);
    this.writeVolumes(m.uid, resolved.volumes);
    if (resolved.volumes.size > 0) this.mounted.set(m.uid, pod);
    return this.inner.startPod(resolved.pod);
  }

  private hold(pod: Pod, err: ConfigError): PodRuntimeStatus {
    const m = pod.metadata!;
    const before = this.waiting.get(m.uid);
    this.d.log.info({ pod: keyOf(m), reason: err.message }, "pod waits for its configuration");
    if ("volume" in err.where)
      this.d.events?.emit(objectRef("Pod", "v1", pod), "Warning", "FailedMount", `MountVolume.SetUp failed for volume "${err.where.volume}" : ${err.message}`);
    if (before?.message === err.message) return before.status;
    const status = waitingStatus(pod, err, before?.status.startedAt ?? nowRfc3339());
    this.waiting.set(m.uid, { pod, status, message: err.message });
    return status;
  }

  /** A ConfigMap or Secret changed (its notice `choreo.notice.<resource>.<namespace>.<name>`): resync now if a pod of its namespace may care. */
  private changed(subject: string): void {
    const ns = untoken(subject.split(".")[3] ?? "");
    const pods = [...[...this.waiting.values()].map((w) => w.pod), ...this.mounted.values()];
    if (pods.some((p) => p.metadata?.namespace === ns)) void this.resync();
  }

  /** One period: waiting pods tried again, mounted files refreshed, volumes of pods gone removed. */
  private async resync(): Promise<void> {
    if (this.syncing) {
      this.again = true;
      return;
    }
    this.syncing = true;
    try {
      do {
        this.again = false;
        for (const [uid, w] of [...this.waiting])
          await this.retry(uid, w).catch((err: unknown) => this.d.log.warn({ err, uid }, "retrying a waiting pod failed"));
        for (const [uid, pod] of [...this.mounted])
          await this.refresh(uid, pod).catch((err: unknown) => this.d.log.warn({ err, uid }, "refreshing config volumes failed"));
        this.removeLeftovers();
      } while (this.again && this.timer);
    } finally {
      this.syncing = false;
    }
  }

  private fresh(pod: Pod): Pod {
    const now = this.d.pods.get(keyOf(pod.metadata!));
    return now?.metadata?.uid === pod.metadata?.uid ? now! : pod;
  }

  private async retry(uid: string, w: Waiting): Promise<void> {
    await this.serial(uid, async () => {
      const cur = this.waiting.get(uid);
      if (cur !== w) return; // stopped, or started, meanwhile
      const pod = this.fresh(cur.pod);
      if (pod.metadata?.deletionTimestamp) return; // being deleted: the agent stops it, nothing to start
      const before = cur.status;
      const status = await this.tryStart(await this.withKubernetesEnv(pod));
      if (status !== before) {
        if (!this.waiting.has(uid)) {
          this.d.log.info({ pod: keyOf(pod.metadata!) }, "pod configuration resolved; started");
          for (const c of status.containerStatuses)
            if (c.state?.running) this.d.events?.emit(objectRef("Pod", "v1", pod), "Normal", "Started", `Started container ${c.name}`);
        }
        for (const l of this.listeners) l({ uid, namespace: pod.metadata!.namespace, name: pod.metadata!.name });
      }
    });
  }

  /** Rewrites a running pod's config volumes from their sources now; one that no longer resolves keeps its files (as the kubelet does). */
  private async refresh(uid: string, stored: Pod): Promise<void> {
    if (!this.inner.podStatus(uid)) {
      this.mounted.delete(uid);
      return;
    }
    const pod = this.fresh(stored);
    const lookup = this.lookup(pod);
    for (const v of pod.spec?.volumes ?? []) {
      if (!isConfigVolume(v) || !this.d.stateDir) continue;
      let payload;
      try {
        payload = await volumePayload(pod, v, lookup, this.d.allocatable);
      } catch (err) {
        if (!(err instanceof ConfigError)) throw err;
        this.d.log.warn({ pod: keyOf(pod.metadata!), volume: v.name, reason: err.message }, "config volume not refreshed");
        continue;
      }
      await this.serial(uid, async () => {
        if (this.mounted.has(uid) && writeAtomic(this.volumeDir(uid, v.name), payload))
          this.d.log.info({ pod: keyOf(pod.metadata!), volume: v.name }, "config volume updated");
      });
    }
  }

  /** Config volumes of pods this node no longer holds (stopped while the agent was away). */
  private removeLeftovers(): void {
    if (!this.d.stateDir) return;
    const root = path.dirname(this.podVolumesDir("x"));
    let uids: string[];
    try {
      uids = fs.readdirSync(root);
    } catch {
      return;
    }
    const keep = new Set([...this.inner.listPods().map((p) => p.uid), ...this.waiting.keys(), ...this.mounted.keys(), ...this.busy.keys()]);
    for (const uid of uids) if (!keep.has(uid)) fs.rmSync(path.join(root, uid), { recursive: true, force: true });
  }

  /** Runs `fn` after whatever runs for `uid`. */
  private serial<T>(uid: string, fn: () => Promise<T>): Promise<T> {
    const prev = this.busy.get(uid) ?? Promise.resolve();
    const next = prev.then(fn, fn);
    const tail = next.catch(() => undefined);
    this.busy.set(uid, tail);
    void tail.then(() => {
      if (this.busy.get(uid) === tail) this.busy.delete(uid);
    });
    return next;
  }
}

/** The statuses {@link waitingStatus} made: nothing of those pods runs. */
const heldBack = new WeakSet<PodRuntimeStatus>();

/** Whether `rt` is the status of a pod held back for its configuration (nothing started: no Started events, no init sequence). */
export function isHeldBack(rt: PodRuntimeStatus): boolean {
  return heldBack.has(rt);
}

/**
 * The status of a pod held back: the container whose configuration failed
 * waits with CreateContainerConfigError and the kubelet's message; the
 * others (all of them for a volume that cannot be set up) ContainerCreating,
 * or PodInitializing behind init containers.
 */
export function waitingStatus(pod: Pod, err: ConfigError, startedAt: string): PodRuntimeStatus {
  const spec = pod.spec;
  const inits = spec?.initContainers ?? [];
  const failing = "container" in err.where ? err.where.container : undefined;
  const status = (name: string, image: string, otherwise: string): ContainerStatus =>
    ContainerStatus.fromPartial({
      name,
      image,
      state: { waiting: name === failing ? { reason: "CreateContainerConfigError", message: err.message } : { reason: otherwise, message: "" } },
    });
  const rt: PodRuntimeStatus = {
    uid: pod.metadata?.uid ?? "",
    podIp: "",
    startedAt,
    containerStatuses: (spec?.containers ?? []).map((c) => status(c.name, c.image, inits.length > 0 ? "PodInitializing" : "ContainerCreating")),
  };
  if (inits.length > 0) rt.initContainerStatuses = inits.map((c) => status(c.name, c.image, "PodInitializing"));
  heldBack.add(rt);
  return rt;
}
