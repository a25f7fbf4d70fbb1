// Informer transforms: what an actor's cache keeps of each object (client-go's
// SharedInformer.SetTransform). A transform runs on every listed and watched
// object before the cache, the indexes and the handlers see it, so an actor
// that never reads a pod's env, probes or managedFields does not hold them for
// each of 150,000 pods. An object in such a cache is not the whole object:
// never build a write (update, updateStatus, a merge patch of a list) from it
// that would carry a dropped field back — patch the fields you own, or get the
// object from the api first.
import type { Container, ContainerStatus, Pod, PodSpec, PodStatus } from "../gen/choreo/core/v1/core.js";
import type { ObjectMeta } from "../gen/choreo/meta/v1/meta.js";

/**
 * What an informer keeps of an object. It gets the object as decoded for this
 * informer; it must return a new object rather than change the one it got
 * (with `known`, that may be the owner's own), keep `metadata.name`,
 * `namespace` and `resourceVersion`, and be idempotent.
 */
export type Transform<T> = (obj: T) => T;

// Shared by every stripped object in place of the empty array or map each
// decoded object carries for every unset list and map field. Frozen: a caller
// that changes a cached object's array in place (copy first!) throws rather
// than changing every object at once.
const NONE: never[] = Object.freeze([]) as unknown as never[];
const NO_MAP: Record<string, never> = Object.freeze({}) as Record<string, never>;

/** The empty lists and maps of `o` replaced by the shared frozen ones (`o` is a fresh copy). */
function shareEmpties<O extends object>(o: O): O {
  const r = o as Record<string, unknown>;
  for (const k in r) {
    const v = r[k];
    if (Array.isArray(v)) {
      if (v.length === 0) r[k] = NONE;
    } else if (v !== null && typeof v === "object" && !(v instanceof Uint8Array) && isEmptyMap(v)) r[k] = NO_MAP;
  }
  return o;
}

function isEmptyMap(v: object): boolean {
  for (const _ in v) return false;
  return true;
}

/**
 * Low-cardinality strings (namespaces, node names, images, condition types,
 * phases) shared by every cached object instead of one decoded copy each.
 * Bounded: past `max` distinct values new ones are kept as they came.
 */
export class Interner {
  private readonly strings = new Map<string, string>();
  constructor(private readonly max = 100_000) {}

  of(s: string): string;
  of(s: string | undefined): string | undefined;
  of(s: string | undefined): string | undefined {
    if (!s) return s;
    const known = this.strings.get(s);
    if (known !== undefined) return known;
    if (this.strings.size < this.max) this.strings.set(s, s);
    return s;
  }

  /** A map's keys and values interned (a new map; the shared empty one for none). */
  map(m: Record<string, string>): Record<string, string> {
    let out: Record<string, string> | undefined;
    for (const k in m) (out ??= {})[this.of(k)] = this.of(m[k] as string);
    return out ?? NO_MAP;
  }

  get size(): number {
    return this.strings.size;
  }
}

/** What {@link stripPod} keeps beyond its defaults. */
export interface PodKeep {
  /** Annotation keys the actor reads (e.g. the job completion index); the others are dropped. Default: none. */
  annotations?: readonly string[];
  /** Shares repeated strings between cached pods (default: one interner per transform). */
  interner?: Interner;
}

/**
 * A transform for the pods of an actor that schedules, counts or routes pods
 * and never runs them (the scheduler, the replication and endpoints
 * actors). Kept: all of `metadata` but `managedFields` and the annotations
 * not named; of `spec` everything but `volumes`, and of each container its
 * name, image, ports, resources and restartPolicy; of `status` everything but
 * each container status's image, imageID, containerID, volumeMounts,
 * resources and user. Dropped: `managedFields` (whose FieldsV1 bytes are a
 * view into the whole message they were decoded from, and so keep that
 * alive), annotations such as kubectl's last-applied-configuration, and
 * each container's command, args, workingDir, env, envFrom, volumeMounts,
 * volumeDevices, probes, lifecycle, securityContext, resizePolicy and
 * termination message settings — what only the node agent, running the
 * pod, reads. Empty lists and maps become one shared frozen value, and
 * low-cardinality strings one shared copy.
 */
export function stripPod(keep: PodKeep = {}): Transform<Pod> {
  const keys = new Set(keep.annotations ?? []);
  const s = keep.interner ?? new Interner();
  const container = (c: Container): Container =>
    shareEmpties({
      name: s.of(c.name),
      image: s.of(c.image),
      command: NONE,
      args: NONE,
      workingDir: "",
      ports: c.ports.length === 0 ? NONE : c.ports.map((p) => ({ ...p, name: s.of(p.name), protocol: s.of(p.protocol), hostIp: s.of(p.hostIp) })),
      env: NONE,
      resources: c.resources && {
        limits: s.map(c.resources.limits),
        requests: s.map(c.resources.requests),
        claims: c.resources.claims.length === 0 ? NONE : c.resources.claims,
      },
      volumeMounts: NONE,
      livenessProbe: undefined,
      readinessProbe: undefined,
      startupProbe: undefined,
      terminationMessagePath: "",
      terminationMessagePolicy: "",
      imagePullPolicy: s.of(c.imagePullPolicy),
      stdin: c.stdin,
      tty: c.tty,
      envFrom: NONE,
      resizePolicy: NONE,
      restartPolicy: s.of(c.restartPolicy),
      volumeDevices: NONE,
      lifecycle: undefined,
      securityContext: undefined,
      stdinOnce: c.stdinOnce,
    });
  const containers = (cs: Container[]): Container[] => (cs.length === 0 ? NONE : cs.map(container));
  const containerStatus = (c: ContainerStatus): ContainerStatus =>
    shareEmpties({
      ...c,
      name: s.of(c.name),
      image: "",
      imageId: "",
      containerId: "",
      allocatedResources: NO_MAP,
      resources: undefined,
      volumeMounts: NONE,
      user: undefined,
    });
  const containerStatuses = (cs: ContainerStatus[]): ContainerStatus[] => (cs.length === 0 ? NONE : cs.map(containerStatus));

  const metadata = (m: ObjectMeta): ObjectMeta => {
    let annotations: Record<string, string> = NO_MAP;
    for (const k of keys) {
      const v = m.annotations[k];
      if (v !== undefined) (annotations === NO_MAP ? (annotations = {}) : annotations)[k] = v;
    }
    return shareEmpties({
      ...m,
      namespace: s.of(m.namespace),
      generateName: s.of(m.generateName),
      labels: s.map(m.labels),
      annotations,
      managedFields: NONE,
    });
  };
  const spec = (p: PodSpec): PodSpec =>
    shareEmpties({
      ...p,
      volumes: NONE,
      initContainers: containers(p.initContainers),
      containers: containers(p.containers),
      ephemeralContainers: NONE,
      restartPolicy: s.of(p.restartPolicy),
      dnsPolicy: s.of(p.dnsPolicy),
      nodeSelector: s.map(p.nodeSelector),
      serviceAccountName: s.of(p.serviceAccountName),
      serviceAccount: s.of(p.serviceAccount),
      nodeName: s.of(p.nodeName),
      schedulerName: s.of(p.schedulerName),
      tolerations:
        p.tolerations.length === 0 ? NONE : p.tolerations.map((t) => ({ ...t, key: s.of(t.key), operator: s.of(t.operator), effect: s.of(t.effect) })),
      priorityClassName: s.of(p.priorityClassName),
      preemptionPolicy: s.of(p.preemptionPolicy),
      securityContext: undefined,
      imagePullSecrets: NONE,
      hostAliases: NONE,
      dnsConfig: undefined,
    });
  const status = (st: PodStatus): PodStatus =>
    shareEmpties({
      ...st,
      phase: s.of(st.phase),
      conditions:
        st.conditions.length === 0
          ? NONE
          : st.conditions.map((c) => ({ ...c, type: s.of(c.type), status: s.of(c.status), reason: s.of(c.reason), lastProbeTime: s.of(c.lastProbeTime) })),
      hostIp: s.of(st.hostIp),
      hostIps: st.hostIps.length === 0 ? NONE : st.hostIps.map((h) => ({ ip: s.of(h.ip) })),
      qosClass: s.of(st.qosClass),
      initContainerStatuses: containerStatuses(st.initContainerStatuses),
      containerStatuses: containerStatuses(st.containerStatuses),
      ephemeralContainerStatuses: NONE,
    });
  return (pod) => ({
    apiVersion: s.of(pod.apiVersion),
    kind: s.of(pod.kind),
    metadata: pod.metadata && metadata(pod.metadata),
    spec: pod.spec && spec(pod.spec),
    status: pod.status && status(pod.status),
  });
}

/** Drops `metadata.managedFields` only (any kind): what every actor can leave out, the api keeping the stored ones on an update without them. */
export function withoutManagedFields<T extends { metadata?: ObjectMeta | undefined }>(obj: T): T {
  const m = obj.metadata;
  if (!m || m.managedFields.length === 0) return obj;
  return { ...obj, metadata: { ...m, managedFields: NONE } };
}
