// Fakes for unit tests: nodes and pods built from a few fields, and an api
// stand-in that feeds the kit's FakeInformer (no nats, no redis).
import { alreadyExists, conflict, emptyMeta, keyOf, kindByCase, notFound, unwrap, wrap, type ApiObject, type KindCase, type KindValue } from "@choreo/kit";
import { TypedClient, type ApiClient, type PatchType } from "@choreo/kit/client";
import type { Node, Pod, Taint, Toleration } from "@choreo/kit/gen/choreo/core/v1/core";
import type { DeleteOptions } from "@choreo/kit/gen/choreo/meta/v1/meta";
import type { Transform } from "@choreo/kit/informer";
import { FakeInformer } from "@choreo/kit/testing";
import { podCacheTransform } from "./pod-cache.js";

export function fakeNode(
  name: string,
  o: { cpu?: string; memory?: string; pods?: string; ready?: string; labels?: Record<string, string>; taints?: Taint[]; unschedulable?: boolean } = {},
): Node {
  const alloc = { cpu: o.cpu ?? "4", memory: o.memory ?? "8Gi", pods: o.pods ?? "110" };
  return {
    apiVersion: "v1",
    kind: "Node",
    metadata: emptyMeta({ name, uid: `uid-${name}`, labels: { "kubernetes.io/hostname": name, ...o.labels } }),
    spec: { podCidr: "", podCidrs: [], unschedulable: o.unschedulable ?? false, taints: o.taints ?? [], providerId: "", externalId: "" },
    status: {
      capacity: alloc,
      allocatable: alloc,
      conditions: [{ type: "Ready", status: o.ready ?? "True", lastHeartbeatTime: "", lastTransitionTime: "", reason: "", message: "" }],
      addresses: [],
      nodeInfo: undefined,
      daemonEndpoints: undefined,
      phase: "",
      images: [],
      volumesInUse: [],
      volumesAttached: [],
      runtimeHandlers: [],
    },
  };
}

export function fakePod(
  name: string,
  o: {
    cpu?: string;
    memory?: string;
    node?: string;
    hostPort?: number;
    selector?: Record<string, string>;
    tolerations?: Toleration[];
    owner?: string;
    priority?: number;
  } = {},
): Pod {
  const requests: Record<string, string> = {};
  if (o.cpu) requests.cpu = o.cpu;
  if (o.memory) requests.memory = o.memory;
  return {
    apiVersion: "v1",
    kind: "Pod",
    metadata: emptyMeta({
      name,
      namespace: "default",
      uid: `uid-${name}`,
      creationTimestamp: "2025-01-01T00:00:00Z",
      ownerReferences: o.owner
        ? [{ apiVersion: "v1", kind: "ReplicationController", name: o.owner, uid: o.owner, controller: true, blockOwnerDeletion: true }]
        : [],
    }),
    spec: {
      volumes: [],
      initContainers: [],
      ephemeralContainers: [],
      restartPolicy: "Always",
      dnsPolicy: "",
      nodeSelector: o.selector ?? {},
      serviceAccountName: "",
      nodeName: o.node ?? "",
      hostNetwork: false,
      hostname: "",
      subdomain: "",
      schedulerName: "default-scheduler",
      tolerations: o.tolerations ?? [],
      priorityClassName: "",
      priority: o.priority,
      preemptionPolicy: "",
      enableServiceLinks: false,
      serviceAccount: "",
      hostPid: false,
      hostIpc: false,
      imagePullSecrets: [],
      hostAliases: [],
      readinessGates: [],
      overhead: {},
      topologySpreadConstraints: [],
      schedulingGates: [],
      resourceClaims: [],
      containers: [
        {
          name: "c",
          image: "i",
          command: [],
          args: [],
          workingDir: "",
          env: [],
          volumeMounts: [],
          terminationMessagePath: "",
          terminationMessagePolicy: "",
          imagePullPolicy: "",
          stdin: false,
          tty: false,
          envFrom: [],
          resizePolicy: [],
          volumeDevices: [],
          stdinOnce: false,
          ports: o.hostPort ? [{ name: "", hostPort: o.hostPort, containerPort: 80, protocol: "TCP", hostIp: "" }] : [],
          resources: { limits: {}, requests, claims: [] },
        },
      ],
    },
    status: undefined,
  };
}

type Meta = { metadata?: { namespace: string; name: string; resourceVersion: string; uid: string } | undefined };

/**
 * The api and its event log as the scheduler's actors see them: objects in
 * maps; every change reaches each informer from {@link FakeApi.informer} on a
 * later tick (the event log's lag); a bind of a bound pod is refused with 409
 * and a write with a stale resourceVersion with 409, like the api.
 */
export class FakeApi {
  private readonly store = new Map<string, Map<string, ApiObject>>();
  private readonly subs = new Map<string, FakeInformer<Meta>[]>();
  private rv = 0;
  /** `resource ns/name` of each delete, in order. */
  readonly deletes: string[] = [];

  /** An informer of `kind` fed by this api: what is stored now, then every change (each on a later tick); pods stripped as the scheduler's informer strips them. */
  informer<C extends KindCase>(kind: C): FakeInformer<KindValue<C>> {
    const resource = kindByCase(kind).resource;
    const inf = new FakeInformer<Meta>(kind === "pod" ? (podCacheTransform() as Transform<unknown> as Transform<Meta>) : undefined);
    // The first list arrives on a later tick too, once the actor added its handlers.
    const seed = [...this.objects(resource).values()].map((o) => structuredClone(unwrap(o)) as Meta);
    setImmediate(() => {
      for (const v of seed) if (!inf.get(keyOf(v.metadata!))) inf.put(v);
    });
    this.subs.set(resource, [...(this.subs.get(resource) ?? []), inf]);
    return inf as unknown as FakeInformer<KindValue<C>>;
  }

  /** The stored values of a kind. */
  values<C extends KindCase>(kind: C): KindValue<C>[] {
    return [...this.objects(kindByCase(kind).resource).values()].map((o) => structuredClone(unwrap(o)) as KindValue<C>);
  }

  /** The api as a client; `typed(kind)` works on it too. */
  get client(): Pick<ApiClient, "get" | "create" | "update" | "updateStatus" | "delete" | "bind" | "bindOnly" | "patch" | "typed"> {
    return this;
  }

  async get(resource: string, namespace: string, name: string): Promise<ApiObject> {
    const o = this.objects(resource).get(keyOf({ namespace, name }));
    if (!o) throw notFound(resource, name);
    return Promise.resolve(structuredClone(o));
  }

  async create(o: ApiObject): Promise<ApiObject> {
    const { resource, v } = this.open(o);
    const meta = v.metadata!;
    if (this.objects(resource).has(keyOf(meta))) throw alreadyExists(resource, meta.name);
    meta.uid ||= `uid-${meta.name}`;
    return Promise.resolve(this.save(resource, o));
  }

  async update(o: ApiObject): Promise<ApiObject> {
    const { resource, v } = this.open(o);
    const old = this.objects(resource).get(keyOf(v.metadata!));
    if (!old) throw notFound(resource, v.metadata!.name);
    const rv = v.metadata!.resourceVersion;
    if (rv && rv !== (unwrap(old) as Meta).metadata?.resourceVersion) throw conflict(resource, v.metadata!.name, "the object has been modified");
    return Promise.resolve(this.save(resource, o));
  }

  async updateStatus(o: ApiObject): Promise<ApiObject> {
    return this.update(o);
  }

  async delete(resource: string, namespace: string, name: string, options?: Partial<DeleteOptions>): Promise<ApiObject> {
    const key = keyOf({ namespace, name });
    const old = this.objects(resource).get(key);
    if (!old) throw notFound(resource, name);
    const uid = options?.preconditions?.uid;
    if (uid && uid !== (unwrap(old) as Meta).metadata?.uid) throw conflict(resource, name, "uid precondition failed");
    this.objects(resource).delete(key);
    this.deletes.push(`${resource} ${key}`);
    this.deliver(resource, key, undefined);
    return Promise.resolve(structuredClone(old));
  }

  async bindOnly(namespace: string, name: string, node: string, uid = ""): Promise<void> {
    await this.bind(namespace, name, node, uid);
  }

  async bind(namespace: string, name: string, node: string, uid = ""): Promise<ApiObject> {
    // Read and write with no await between: the api's bind is atomic.
    const stored = this.objects("pods").get(keyOf({ namespace, name }));
    if (!stored) throw notFound("pods", name);
    const pod = structuredClone(unwrap(stored)) as Pod;
    if (uid && pod.metadata?.uid !== uid) throw conflict("pods", name, "uid changed");
    if (pod.spec?.nodeName) throw conflict("pods", name, `pod is already assigned to node "${pod.spec.nodeName}"`);
    pod.spec!.nodeName = node;
    return Promise.resolve(this.save("pods", wrap("pod", pod)));
  }

  async patch(resource: string, namespace: string, name: string, _type: PatchType, patch: unknown, subresource = ""): Promise<ApiObject> {
    const o = await this.get(resource, namespace, name);
    // Only what the scheduler patches: status.nominatedNodeName.
    const nominated = (patch as { status?: { nominatedNodeName?: string } }).status?.nominatedNodeName;
    if (subresource === "status" && nominated !== undefined && o.kind?.$case === "pod" && o.kind.value.status)
      o.kind.value.status.nominatedNodeName = nominated;
    return this.save(resource, o);
  }

  typed<C extends KindCase>(kind: C): TypedClient<C> {
    // TypedClient only calls get/list/create/update/updateStatus/delete, all here.
    return new TypedClient(this as unknown as ApiClient, kind);
  }

  private objects(resource: string): Map<string, ApiObject> {
    let m = this.store.get(resource);
    if (!m) this.store.set(resource, (m = new Map()));
    return m;
  }

  private open(o: ApiObject): { resource: string; v: Meta } {
    if (!o.kind) throw new Error("an object without a kind");
    return { resource: kindByCase(o.kind.$case).resource, v: unwrap(o) as Meta };
  }

  private save(resource: string, o: ApiObject): ApiObject {
    const stored = structuredClone(o);
    const v = unwrap(stored) as Meta;
    v.metadata!.resourceVersion = String(++this.rv);
    const key = keyOf(v.metadata!);
    this.objects(resource).set(key, stored);
    this.deliver(resource, key, v);
    return structuredClone(stored);
  }

  private deliver(resource: string, key: string, v: Meta | undefined): void {
    const subs = this.subs.get(resource) ?? [];
    setImmediate(() => {
      for (const inf of subs) {
        if (v) inf.put(structuredClone(v));
        else inf.remove(key);
      }
    });
  }
}
