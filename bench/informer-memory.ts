// Heap per cached pod, as an actor's informer holds it, and the CPU of the
// informer transform (issue 15). Each of N pods is encoded as a watch event,
// the events packed into 64 KB chunks (as a socket read hands them to the
// nats client) and each decoded from its view of its chunk — so what a
// decoded pod keeps alive (a bytes field is a view into the chunk) counts —
// then kept in a Map as the informer's cache does, through the transform.
// One child process per (pod shape, transform), for a clean heap.
//
//   node --import tsx bench/informer-memory.ts [pods=30000]
import { execFileSync } from "node:child_process";
import { fileURLToPath } from "node:url";
import { keyOf, wrap } from "@choreo/kit";
import { decodeEvent, encodeEvent } from "@choreo/kit/bus";
import { WatchEvent } from "@choreo/kit/gen/choreo/api/v1/api";
import type { Pod } from "@choreo/kit/gen/choreo/core/v1/core";
import { sharePod, stripPod, withoutManagedFields, type Transform } from "@choreo/kit/informer";
import { fromKubeJson } from "@choreo/kit/kube-json";

const SHAPES = ["bench", "realistic"] as const;
const TRANSFORMS = ["none", "withoutManagedFields", "stripPod", "sharePod"] as const;
type Shape = (typeof SHAPES)[number];
type TransformName = (typeof TRANSFORMS)[number];

const node = (i: number) => `hollow-${i % 1000}`;
const ip = (i: number) => `10.${(i >> 16) & 255}.${(i >> 8) & 255}.${i & 255}`;
const uid = (i: number) => `6f1c2b4e-0000-4000-8000-${String(i).padStart(12, "0")}`;
const at = "2026-11-27T05:00:00Z";

/** A Running pod as bench:scale's RC makes it and a hollow node agent reports it. */
function benchPod(i: number): object {
  return {
    apiVersion: "v1",
    kind: "Pod",
    metadata: {
      name: `bench-${i}`,
      generateName: "bench-",
      namespace: "default",
      uid: uid(i),
      resourceVersion: String(1_000_000 + i),
      creationTimestamp: at,
      labels: { app: "bench" },
      ownerReferences: [{ apiVersion: "v1", kind: "ReplicationController", name: "bench", uid: uid(0), controller: true, blockOwnerDeletion: true }],
    },
    spec: {
      containers: [
        {
          name: "c",
          image: "pause",
          resources: { requests: { cpu: "10m", memory: "16Mi" } },
          terminationMessagePath: "/dev/termination-log",
          terminationMessagePolicy: "File",
          imagePullPolicy: "IfNotPresent",
        },
      ],
      restartPolicy: "Always",
      terminationGracePeriodSeconds: 30,
      dnsPolicy: "ClusterFirst",
      serviceAccountName: "default",
      nodeName: node(i),
      schedulerName: "default-scheduler",
      enableServiceLinks: true,
      preemptionPolicy: "PreemptLowerPriority",
      priority: 0,
    },
    status: {
      phase: "Running",
      conditions: ["PodReadyToStartContainers", "Initialized", "Ready", "ContainersReady", "PodScheduled"].map((type) => ({
        type,
        status: "True",
        lastTransitionTime: at,
      })),
      hostIP: `192.168.${(i % 1000) >> 8}.${i % 256}`,
      podIP: ip(i),
      podIPs: [{ ip: ip(i) }],
      startTime: at,
      containerStatuses: [
        {
          name: "c",
          state: { running: { startedAt: at } },
          ready: true,
          restartCount: 0,
          image: "pause",
          imageID: "hollow://pause",
          containerID: `hollow://${uid(i)}/c`,
          started: true,
        },
      ],
      qosClass: "Burstable",
    },
  };
}

/** A Deployment's pod applied with kubectl: last-applied annotation, managedFields of three managers, env, probes, mounts, a projected token volume. */
function realisticPod(i: number): object {
  const p = benchPod(i) as { metadata: Record<string, unknown>; spec: Record<string, unknown>; status: Record<string, unknown> };
  const container = {
    name: "web",
    image: "registry.example.com/shop/web:1.27.3@sha256:4c1e5d5c3b1f0e6a2d9c8b7a6f5e4d3c2b1a09f8e7d6c5b4a39281706f5e4d3c",
    command: ["/app/server"],
    args: ["--port=8080", "--log-level=info", "--config=/etc/web/config.yaml"],
    ports: [
      { name: "http", containerPort: 8080, protocol: "TCP" },
      { name: "metrics", containerPort: 9090, protocol: "TCP" },
    ],
    env: [
      ...["DB_HOST", "DB_PORT", "DB_NAME", "CACHE_URL", "FEATURE_FLAGS", "OTEL_EXPORTER_OTLP_ENDPOINT", "GOMAXPROCS"].map((name, k) => ({
        name,
        value: `value-${k}-${name.toLowerCase()}`,
      })),
      { name: "POD_NAME", valueFrom: { fieldRef: { apiVersion: "v1", fieldPath: "metadata.name" } } },
      { name: "POD_IP", valueFrom: { fieldRef: { apiVersion: "v1", fieldPath: "status.podIP" } } },
    ],
    resources: { requests: { cpu: "100m", memory: "128Mi" }, limits: { cpu: "500m", memory: "256Mi" } },
    volumeMounts: [
      { name: "config", mountPath: "/etc/web", readOnly: true },
      { name: "kube-api-access-x7k2p", mountPath: "/var/run/secrets/kubernetes.io/serviceaccount", readOnly: true },
    ],
    livenessProbe: {
      httpGet: { path: "/healthz", port: 8080, scheme: "HTTP" },
      initialDelaySeconds: 10,
      periodSeconds: 10,
      timeoutSeconds: 1,
      successThreshold: 1,
      failureThreshold: 3,
    },
    readinessProbe: { httpGet: { path: "/ready", port: 8080, scheme: "HTTP" }, periodSeconds: 5, timeoutSeconds: 1, successThreshold: 1, failureThreshold: 3 },
    terminationMessagePath: "/dev/termination-log",
    terminationMessagePolicy: "File",
    imagePullPolicy: "IfNotPresent",
    securityContext: { runAsNonRoot: true, allowPrivilegeEscalation: false, readOnlyRootFilesystem: true, capabilities: { drop: ["ALL"] } },
  };
  const labels = { app: "web", "pod-template-hash": "7d4b9c8f6", tier: "frontend" };
  const applied = JSON.stringify({
    apiVersion: "v1",
    kind: "Pod",
    metadata: { labels, name: `web-${i}`, namespace: "default" },
    spec: { containers: [container] },
  });
  const f = (keys: string[]) => Object.fromEntries(keys.map((k) => [`f:${k}`, {}]));
  p.metadata = {
    ...p.metadata,
    name: `web-${i}`,
    generateName: "web-7d4b9c8f6-",
    labels,
    annotations: { "kubectl.kubernetes.io/last-applied-configuration": applied, "prometheus.io/scrape": "true", "prometheus.io/port": "9090" },
    managedFields: [
      {
        manager: "kubectl-client-side-apply",
        operation: "Update",
        apiVersion: "v1",
        time: at,
        fieldsType: "FieldsV1",
        fieldsV1: {
          "f:metadata": { "f:annotations": { ".": {}, "f:kubectl.kubernetes.io/last-applied-configuration": {} }, "f:labels": f(Object.keys(labels)) },
          "f:spec": {
            "f:containers": {
              'k:{"name":"web"}': {
                ".": {},
                ...f(["args", "command", "image", "imagePullPolicy", "name", "terminationMessagePath", "terminationMessagePolicy"]),
                "f:env": Object.fromEntries(container.env.map((e) => [`k:{"name":"${e.name}"}`, { ".": {}, "f:name": {}, "f:value": {} }])),
                "f:livenessProbe": { ".": {}, "f:httpGet": f(["path", "port", "scheme"]), ...f(["failureThreshold", "initialDelaySeconds", "periodSeconds"]) },
                "f:ports": { ".": {}, 'k:{"containerPort":8080,"protocol":"TCP"}': { ".": {}, ...f(["containerPort", "name", "protocol"]) } },
                "f:resources": { ".": {}, "f:limits": f(["cpu", "memory"]), "f:requests": f(["cpu", "memory"]) },
                "f:volumeMounts": { ".": {}, 'k:{"mountPath":"/etc/web"}': { ".": {}, ...f(["mountPath", "name", "readOnly"]) } },
              },
            },
            ...f(["dnsPolicy", "enableServiceLinks", "restartPolicy", "schedulerName", "terminationGracePeriodSeconds"]),
          },
        },
      },
      {
        manager: "kube-scheduler",
        operation: "Update",
        apiVersion: "v1",
        time: at,
        fieldsType: "FieldsV1",
        subresource: "status",
        fieldsV1: {
          "f:status": {
            "f:conditions": { ".": {}, 'k:{"type":"PodScheduled"}': { ".": {}, ...f(["lastProbeTime", "lastTransitionTime", "status", "type"]) } },
          },
        },
      },
      {
        manager: "kubelet",
        operation: "Update",
        apiVersion: "v1",
        time: at,
        fieldsType: "FieldsV1",
        subresource: "status",
        fieldsV1: {
          "f:status": {
            "f:conditions": Object.fromEntries(
              ["ContainersReady", "Initialized", "PodReadyToStartContainers", "Ready"].map((t) => [
                `k:{"type":"${t}"}`,
                { ".": {}, ...f(["lastProbeTime", "lastTransitionTime", "status", "type"]) },
              ]),
            ),
            ...f(["containerStatuses", "hostIP", "hostIPs", "phase", "podIP", "podIPs", "startTime"]),
          },
        },
      },
    ],
  };
  p.spec = {
    ...p.spec,
    containers: [container],
    volumes: [
      { name: "config", configMap: { name: "web-config", defaultMode: 420 } },
      {
        name: "kube-api-access-x7k2p",
        projected: {
          defaultMode: 420,
          sources: [
            { serviceAccountToken: { expirationSeconds: 3607, path: "token" } },
            { configMap: { name: "kube-root-ca.crt", items: [{ key: "ca.crt", path: "ca.crt" }] } },
            { downwardAPI: { items: [{ path: "namespace", fieldRef: { apiVersion: "v1", fieldPath: "metadata.namespace" } }] } },
          ],
        },
      },
    ],
    tolerations: [
      { key: "node.kubernetes.io/not-ready", operator: "Exists", effect: "NoExecute", tolerationSeconds: 300 },
      { key: "node.kubernetes.io/unreachable", operator: "Exists", effect: "NoExecute", tolerationSeconds: 300 },
    ],
    securityContext: { runAsUser: 1000, fsGroup: 2000 },
  };
  const cs = (p.status["containerStatuses"] as Record<string, unknown>[])[0]!;
  p.status["containerStatuses"] = [{ ...cs, name: "web", image: container.image, imageID: container.image }];
  return p;
}

/** The events of N pods packed into 64 KB chunks, each event a view of its chunk (as nats.js hands a message over); and the chunks' bytes. */
function chunkedEvents(shape: Shape, n: number): { views: Uint8Array[]; bytes: number } {
  const make = shape === "bench" ? benchPod : realisticPod;
  // One conversion from Kubernetes JSON (slow), then each pod's own name, uid, node and IPs.
  const template = fromKubeJson(make(0) as never);
  const encoded: Uint8Array[] = [];
  for (let i = 0; i < n; i++) {
    const o = structuredClone(template);
    const pod = (o.kind as { value: Pod }).value;
    const m = pod.metadata!;
    m.name = `${m.generateName}${i}`;
    m.uid = uid(i);
    m.resourceVersion = String(1_000_000 + i);
    pod.spec!.nodeName = node(i);
    const st = pod.status!;
    st.podIp = ip(i);
    st.podIps = [{ ip: ip(i) }];
    st.hostIp = `192.168.${(i % 1000) >> 8}.${i % 256}`;
    for (const c of st.containerStatuses) c.containerId = `hollow://${uid(i)}/${c.name}`;
    encoded.push(encodeEvent(WatchEvent.fromPartial({ type: "MODIFIED", revision: i + 1, object: o })));
  }
  const views: Uint8Array[] = [];
  let chunk = new Uint8Array(0);
  let at = 0;
  let bytes = 0;
  for (const e of encoded) {
    if (at + e.length > chunk.length) {
      chunk = new Uint8Array(Math.max(64 * 1024, e.length));
      bytes += chunk.length;
      at = 0;
    }
    chunk.set(e, at);
    views.push(chunk.subarray(at, at + e.length));
    at += e.length;
  }
  return { views, bytes };
}

const gc = (): void => {
  for (let i = 0; i < 4; i++) (globalThis as { gc?: () => void }).gc?.();
};
const used = (): number => {
  const m = process.memoryUsage();
  return m.heapUsed + m.arrayBuffers;
};

/** One measurement (a child process run with --expose-gc). */
function measure(shape: Shape, name: TransformName, n: number): void {
  const transform: Transform<Pod> =
    name === "stripPod" ? stripPod() : name === "sharePod" ? sharePod() : name === "withoutManagedFields" ? withoutManagedFields : (p) => p;
  // sharePod changes what it is given when the informer owns it, as each decoded event here is (the others copy).
  const own = name === "sharePod";
  const chunked = chunkedEvents(shape, n);
  let views = chunked.views;
  gc();
  const base = used();
  const baseArrayBuffers = process.memoryUsage().arrayBuffers;
  const cache = new Map<string, Pod>();
  // As the informer: each event decoded, transformed and cached in turn; the CPU includes the GC it causes.
  const t0 = process.cpuUsage();
  for (const v of views) {
    const kept = transform((decodeEvent(v).object?.kind as { value: Pod }).value, own);
    cache.set(keyOf(kept.metadata!), kept);
  }
  const t1 = process.cpuUsage(t0);
  // The chunks are the socket's: once the events are handled, only what the cache keeps holds them.
  views = [];
  chunked.views = [];
  gc();
  const perPod = (used() - base + chunked.bytes) / n;
  const arrayBuffers = (process.memoryUsage().arrayBuffers - baseArrayBuffers + chunked.bytes) / n;
  // Re-encoded size of one kept pod, for scale.
  const one = cache.values().next().value as Pod;
  const wire = encodeEvent(WatchEvent.fromPartial({ object: wrap("pod", one) })).length;
  const us = (u: NodeJS.CpuUsage) => +((u.user + u.system) / n).toFixed(2);
  console.log(
    JSON.stringify({
      shape,
      transform: name,
      pods: cache.size,
      perPodBytes: Math.round(perPod),
      arrayBufferBytes: Math.round(arrayBuffers),
      cpuUs: us(t1),
      keptWireBytes: wire,
    }),
  );
}

const args = process.argv.slice(2);
if (args[0] === "--one") {
  measure(args[1] as Shape, args[2] as TransformName, Number(args[3]));
} else {
  const n = Number(args[0] ?? 30_000);
  const self = fileURLToPath(import.meta.url);
  console.log(`informer memory: ${n} pods per run, heap + array buffers after a full GC, per cached pod`);
  console.log("shape      transform              bytes/pod  (of which buffers)  decode+transform+cache µs/pod  kept, encoded");
  for (const shape of SHAPES) {
    for (const t of TRANSFORMS) {
      const out = execFileSync(process.execPath, ["--expose-gc", "--import", "tsx", self, "--one", shape, t, String(n)], { encoding: "utf8" });
      const r = JSON.parse(out.trim().split("\n").pop()!) as { perPodBytes: number; arrayBufferBytes: number; cpuUs: number; keptWireBytes: number };
      console.log(
        `${shape.padEnd(10)} ${t.padEnd(22)} ${String(r.perPodBytes).padStart(9)}  ${String(r.arrayBufferBytes).padStart(18)}  ${String(r.cpuUs).padStart(29)}  ${String(r.keptWireBytes).padStart(13)}`,
      );
    }
  }
}
