// Informer transforms: what an actor's cache keeps of each object (client-go's
// SharedInformer.SetTransform). A transform runs on every listed and watched
// object before the cache, the indexes and the handlers see it, so an actor
// that never reads a pod's env, probes or managedFields does not hold them for
// each of 150,000 pods. An object in such a cache is not the whole object:
// never build a write (update, updateStatus, a merge patch of a list) from it
// that would carry a dropped field back — patch the fields you own, or get the
// object from the api first.
import type {
  Container,
  ContainerPort,
  ContainerStatus,
  HostIP,
  Pod,
  PodCondition,
  PodSpec,
  PodStatus,
  ResourceRequirements,
  Toleration,
} from "../gen/choreo/core/v1/core.js";
import type { ObjectMeta } from "../gen/choreo/meta/v1/meta.js";

/**
 * What an informer keeps of an object. It gets the object as decoded for this
 * informer; it must keep `metadata.name`, `namespace` and `resourceVersion`,
 * and be idempotent. With `own` false (or absent) it must return a new object
 * rather than change the one it got (with `known`, that may be the owner's
 * own); with `own` true the object was decoded for this call alone and
 * nobody else holds it, so it may change it in place and return it (no copy:
 * what the informer keeps is the same either way).
 */
export type Transform<T> = (obj: T, own?: boolean) => T;

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
  // Each piece below fills `o`: the decoded object itself when the informer owns it, a shallow copy otherwise.
  const container = (c: Container, own: boolean): Container => {
    const o = own ? c : { ...c };
    o.name = s.of(c.name);
    o.image = s.of(c.image);
    o.command = NONE;
    o.args = NONE;
    o.workingDir = "";
    o.ports = c.ports.length === 0 ? NONE : c.ports.map((p) => port(p, own));
    o.env = NONE;
    o.resources = c.resources && resources(c.resources, own);
    o.volumeMounts = NONE;
    o.livenessProbe = undefined;
    o.readinessProbe = undefined;
    o.startupProbe = undefined;
    o.terminationMessagePath = "";
    o.terminationMessagePolicy = "";
    o.imagePullPolicy = s.of(c.imagePullPolicy);
    o.envFrom = NONE;
    o.resizePolicy = NONE;
    o.restartPolicy = s.of(c.restartPolicy);
    o.volumeDevices = NONE;
    o.lifecycle = undefined;
    o.securityContext = undefined;
    return shareEmpties(o);
  };
  const port = (p: ContainerPort, own: boolean): ContainerPort => {
    const o = own ? p : { ...p };
    o.name = s.of(p.name);
    o.protocol = s.of(p.protocol);
    o.hostIp = s.of(p.hostIp);
    return o;
  };
  const resources = (r: ResourceRequirements, own: boolean): ResourceRequirements => {
    const o = own ? r : { ...r };
    o.limits = s.map(r.limits);
    o.requests = s.map(r.requests);
    o.claims = r.claims.length === 0 ? NONE : r.claims;
    return o;
  };
  const containers = (cs: Container[], own: boolean): Container[] => each(cs, container, own);
  const containerStatus = (c: ContainerStatus, own: boolean): ContainerStatus => {
    const o = own ? c : { ...c };
    o.name = s.of(c.name);
    o.image = "";
    o.imageId = "";
    o.containerId = "";
    o.allocatedResources = NO_MAP;
    o.resources = undefined;
    o.volumeMounts = NONE;
    o.user = undefined;
    return shareEmpties(o);
  };
  const containerStatuses = (cs: ContainerStatus[], own: boolean): ContainerStatus[] => each(cs, containerStatus, own);

  const metadata = (m: ObjectMeta, own: boolean): ObjectMeta => {
    let annotations: Record<string, string> = NO_MAP;
    for (const k of keys) {
      const v = m.annotations[k];
      if (v !== undefined) (annotations === NO_MAP ? (annotations = {}) : annotations)[k] = v;
    }
    const o = own ? m : { ...m };
    o.namespace = s.of(m.namespace);
    o.generateName = s.of(m.generateName);
    o.labels = s.map(m.labels);
    o.annotations = annotations;
    o.managedFields = NONE;
    return shareEmpties(o);
  };
  const toleration = (t: Toleration, own: boolean): Toleration => {
    const o = own ? t : { ...t };
    o.key = s.of(t.key);
    o.operator = s.of(t.operator);
    o.effect = s.of(t.effect);
    return o;
  };
  const spec = (p: PodSpec, own: boolean): PodSpec => {
    const o = own ? p : { ...p };
    o.volumes = NONE;
    o.initContainers = containers(p.initContainers, own);
    o.containers = containers(p.containers, own);
    o.ephemeralContainers = NONE;
    o.restartPolicy = s.of(p.restartPolicy);
    o.dnsPolicy = s.of(p.dnsPolicy);
    o.nodeSelector = s.map(p.nodeSelector);
    o.serviceAccountName = s.of(p.serviceAccountName);
    o.serviceAccount = s.of(p.serviceAccount);
    o.nodeName = s.of(p.nodeName);
    o.schedulerName = s.of(p.schedulerName);
    o.tolerations = each(p.tolerations, toleration, own);
    o.priorityClassName = s.of(p.priorityClassName);
    o.preemptionPolicy = s.of(p.preemptionPolicy);
    o.securityContext = undefined;
    o.imagePullSecrets = NONE;
    o.hostAliases = NONE;
    o.dnsConfig = undefined;
    return shareEmpties(o);
  };
  const condition = (c: PodCondition, own: boolean): PodCondition => {
    const o = own ? c : { ...c };
    o.type = s.of(c.type);
    o.status = s.of(c.status);
    o.reason = s.of(c.reason);
    o.lastProbeTime = s.of(c.lastProbeTime);
    return o;
  };
  const hostIp = (h: HostIP, own: boolean): HostIP => {
    if (!own) return { ip: s.of(h.ip) };
    h.ip = s.of(h.ip);
    return h;
  };
  const status = (st: PodStatus, own: boolean): PodStatus => {
    const o = own ? st : { ...st };
    o.phase = s.of(st.phase);
    o.conditions = each(st.conditions, condition, own);
    o.hostIp = s.of(st.hostIp);
    o.hostIps = each(st.hostIps, hostIp, own);
    o.qosClass = s.of(st.qosClass);
    o.initContainerStatuses = containerStatuses(st.initContainerStatuses, own);
    o.containerStatuses = containerStatuses(st.containerStatuses, own);
    o.ephemeralContainerStatuses = NONE;
    return shareEmpties(o);
  };
  return (pod, own = false) => {
    const o = own ? pod : { ...pod };
    o.apiVersion = s.of(pod.apiVersion);
    o.kind = s.of(pod.kind);
    o.metadata = pod.metadata && metadata(pod.metadata, own);
    o.spec = pod.spec && spec(pod.spec, own);
    o.status = pod.status && status(pod.status, own);
    return o;
  };
}

/** `a`'s items through `f` (the object itself owned), in place. */
/** `f` of every element: in place when the caller owns the list, else into a new one; an empty list is the shared one. */
function each<X>(a: X[], f: (x: X, own: boolean) => X, own: boolean): X[] {
  return a.length === 0 ? NONE : own ? mapInPlace(a, f) : a.map((x) => f(x, false));
}

function mapInPlace<X>(a: X[], f: (x: X, own: boolean) => X): X[] {
  for (let i = 0; i < a.length; i++) a[i] = f(a[i] as X, true);
  return a;
}

/** Drops `metadata.managedFields` only (any kind): what every actor can leave out, the api keeping the stored ones on an update without them. */
export function withoutManagedFields<T extends { metadata?: ObjectMeta | undefined }>(obj: T, own = false): T {
  const m = obj.metadata;
  if (!m || m.managedFields.length === 0) return obj;
  if (own) {
    m.managedFields = NONE;
    return obj;
  }
  return { ...obj, metadata: { ...m, managedFields: NONE } };
}

/** Fields whose strings repeat across pods (kinds, images, policies, condition types, node names): one shared copy. */
const LOW_CARDINALITY = new Set([
  "apiVersion",
  "kind",
  "namespace",
  "generateName",
  "image",
  "imageId",
  "imagePullPolicy",
  "terminationMessagePath",
  "terminationMessagePolicy",
  "restartPolicy",
  "dnsPolicy",
  "serviceAccountName",
  "serviceAccount",
  "nodeName",
  "schedulerName",
  "priorityClassName",
  "preemptionPolicy",
  "protocol",
  "type",
  "status",
  "reason",
  "phase",
  "qosClass",
  "hostIp",
  "key",
  "operator",
  "effect",
  "mountPath",
  "subPath",
  "fieldPath",
  "resource",
  "divisor",
  "path",
  "scheme",
  "command",
  "args",
]);
/** Map fields (any key): their keys and short values are shared. */
const MAP_FIELDS = new Set(["labels", "annotations", "nodeSelector", "limits", "requests", "overhead", "allocatedResources"]);
/** Longer strings (kubectl's last-applied-configuration) are kept as they came: rarely shared, and the interner would hold them. */
const MAX_SHARED_LENGTH = 256;

/**
 * A transform for the pods of an actor that runs them (the node agent): it
 * keeps every field but `managedFields` and changes no value, but empty lists
 * and maps become the shared frozen ones and strings that repeat across pods
 * (see `LOW_CARDINALITY`; a container's name, image and command, labels, the
 * node's name) one shared copy — in the node agent's heap, a bench:scale pod
 * was ~31 arrays and ~50 strings, most of them empty or repeated. Names,
 * uids, IPs and timestamps are left as they are (the interner would fill with
 * values used once). The pod is changed in place when the informer owns it;
 * a pod this transform made (the owner's own write, passed through it first)
 * is returned as it is; another is copied first.
 */
export function sharePod(interner: Interner = new Interner()): Transform<Pod> {
  const s = interner;
  const made = new WeakSet<object>();
  const value = (v: unknown, field: string, low: boolean): unknown => {
    if (typeof v === "string") return low && v.length <= MAX_SHARED_LENGTH ? s.of(v) : v;
    if (v === null || typeof v !== "object" || v instanceof Uint8Array) return v;
    if (Array.isArray(v)) {
      if (v.length === 0) return NONE;
      for (let i = 0; i < v.length; i++) v[i] = value(v[i], field, low);
      return v;
    }
    const o = v as Record<string, unknown>;
    if (MAP_FIELDS.has(field)) {
      let out: Record<string, unknown> | undefined;
      for (const k in o) {
        const x = o[k];
        (out ??= {})[s.of(k)] = typeof x === "string" && x.length <= MAX_SHARED_LENGTH ? s.of(x) : x;
      }
      return out ?? NO_MAP;
    }
    let empty = true;
    for (const k in o) {
      empty = false;
      // A container's name repeats across pods; the object's own name does not (metadata is walked apart).
      // `low` is the field's own: it reaches the strings of a list (a command's words), never a message's fields.
      o[k] = value(o[k], k, LOW_CARDINALITY.has(k) || (k === "name" && field !== "metadata"));
    }
    return empty ? NO_MAP : o;
  };
  return (pod, own = false) => {
    if (made.has(pod)) return pod;
    const p = own ? pod : (structuredClone(pod) as Pod);
    const plain = withoutManagedFields(p, true) as unknown as Record<string, unknown>;
    for (const k in plain) plain[k] = value(plain[k], k, LOW_CARDINALITY.has(k));
    made.add(p);
    return p;
  };
}
