import assert from "node:assert/strict";
import { describe, it } from "node:test";
import protobuf from "protobufjs";
import { ApiError } from "../api/errors.js";
import { KINDS } from "../api/kinds.js";
import { fromKubeJson, toKubeJson } from "../kube-json/index.js";
import {
  decodeMessage,
  decodeObject,
  decodeWatchFrames,
  encodeMessage,
  encodeObject,
  encodeWatchFrame,
  formatDuration,
  MAGIC,
  messageOfKind,
  parseDuration,
  type KubeJson,
} from "./index.js";

const META = { name: "x", namespace: "default", uid: "0b7f1c3e-1111-2222-3333-444455556666", resourceVersion: "42", generation: 3 };
const FULL_META = {
  ...META,
  generateName: "x-",
  creationTimestamp: "2024-05-01T10:00:00Z",
  deletionTimestamp: "2024-05-01T11:00:00Z",
  deletionGracePeriodSeconds: 30,
  labels: { app: "web", tier: "front" },
  annotations: { "example.com/a": "1" },
  ownerReferences: [{ apiVersion: "v1", kind: "ReplicationController", name: "rc", uid: "u-1", controller: true, blockOwnerDeletion: true }],
  finalizers: ["example.com/f"],
  managedFields: [
    {
      manager: "kubectl",
      operation: "Update",
      apiVersion: "v1",
      time: "2024-05-01T10:00:00Z",
      fieldsType: "FieldsV1",
      fieldsV1: { "f:metadata": { "f:labels": { ".": {} } } },
    },
  ],
};

const POD_SPEC = {
  volumes: [
    { name: "data", emptyDir: { sizeLimit: "1Gi" } },
    { name: "cfg", configMap: { name: "c", defaultMode: 420, items: [{ key: "a", path: "a.txt" }] } },
    { name: "host", hostPath: { path: "/var/log", type: "Directory" } },
  ],
  initContainers: [{ name: "init", image: "busybox", command: ["sh", "-c", "true"] }],
  containers: [
    {
      name: "web",
      image: "nginx:1.27",
      args: ["-g", "daemon off;"],
      workingDir: "/srv",
      ports: [{ name: "http", containerPort: 80, protocol: "TCP" }],
      env: [
        { name: "A", value: "1" },
        { name: "B", valueFrom: { configMapKeyRef: { name: "c", key: "b", optional: true } } },
        { name: "POD", valueFrom: { fieldRef: { apiVersion: "v1", fieldPath: "metadata.name" } } },
      ],
      envFrom: [{ prefix: "C_", configMapRef: { name: "c" } }],
      resources: { limits: { cpu: "500m", memory: "128Mi" }, requests: { cpu: "100m" } },
      volumeMounts: [{ name: "data", mountPath: "/data", readOnly: true }],
      livenessProbe: { httpGet: { path: "/healthz", port: "http", scheme: "HTTP" }, initialDelaySeconds: 5, periodSeconds: 10, failureThreshold: 3 },
      readinessProbe: { tcpSocket: { port: 80 }, timeoutSeconds: 1 },
      startupProbe: { exec: { command: ["cat", "/ready"] } },
      lifecycle: { preStop: { sleep: { seconds: 2 } } },
      imagePullPolicy: "IfNotPresent",
      securityContext: { runAsUser: 1000, runAsNonRoot: true, capabilities: { drop: ["ALL"] } },
      stdin: true,
      tty: false,
    },
  ],
  restartPolicy: "Always",
  terminationGracePeriodSeconds: 0,
  activeDeadlineSeconds: 600,
  dnsPolicy: "ClusterFirst",
  nodeSelector: { "kubernetes.io/os": "linux" },
  serviceAccountName: "default",
  nodeName: "n1",
  hostNetwork: false,
  schedulerName: "default-scheduler",
  tolerations: [{ key: "k", operator: "Exists", effect: "NoSchedule", tolerationSeconds: 30 }],
  affinity: {
    nodeAffinity: {
      requiredDuringSchedulingIgnoredDuringExecution: { nodeSelectorTerms: [{ matchExpressions: [{ key: "z", operator: "In", values: ["a"] }] }] },
    },
  },
  priority: 0,
};

const TEMPLATE = { metadata: { labels: { app: "web" } }, spec: POD_SPEC };

/** One rich Kubernetes JSON object per kind choreo serves (and the subresource kinds). */
const SAMPLES: KubeJson[] = [
  { apiVersion: "v1", kind: "Namespace", metadata: { ...FULL_META, namespace: undefined }, spec: { finalizers: ["kubernetes"] }, status: { phase: "Active" } },
  {
    apiVersion: "v1",
    kind: "Node",
    metadata: { name: "n1", labels: { "kubernetes.io/hostname": "n1" } },
    spec: {
      podCIDR: "10.0.1.0/24",
      podCIDRs: ["10.0.1.0/24"],
      unschedulable: true,
      taints: [{ key: "k", value: "v", effect: "NoSchedule", timeAdded: "2024-05-01T10:00:00Z" }],
    },
    status: {
      capacity: { cpu: "4", memory: "8Gi", pods: "110" },
      allocatable: { cpu: "3800m", memory: "7Gi", pods: "110" },
      conditions: [
        {
          type: "Ready",
          status: "True",
          lastHeartbeatTime: "2024-05-01T10:00:00Z",
          lastTransitionTime: "2024-05-01T09:00:00Z",
          reason: "KubeletReady",
          message: "ok",
        },
      ],
      addresses: [{ type: "InternalIP", address: "10.0.0.1" }],
      daemonEndpoints: { kubeletEndpoint: { Port: 10250 } },
      nodeInfo: {
        machineID: "m",
        systemUUID: "s",
        bootID: "b",
        kernelVersion: "6",
        osImage: "Debian",
        containerRuntimeVersion: "docker://27",
        kubeletVersion: "v1.32.0",
        operatingSystem: "linux",
        architecture: "amd64",
      },
    },
  },
  {
    apiVersion: "v1",
    kind: "Pod",
    metadata: FULL_META,
    spec: POD_SPEC,
    status: {
      phase: "Running",
      conditions: [{ type: "Ready", status: "True", lastProbeTime: null, lastTransitionTime: "2024-05-01T10:00:01Z" }],
      hostIP: "10.0.0.1",
      podIP: "10.1.0.5",
      podIPs: [{ ip: "10.1.0.5" }],
      startTime: "2024-05-01T10:00:00Z",
      containerStatuses: [
        {
          name: "web",
          state: { running: { startedAt: "2024-05-01T10:00:01Z" } },
          lastState: {
            terminated: {
              exitCode: 137,
              signal: 9,
              reason: "OOMKilled",
              startedAt: "2024-05-01T09:00:00Z",
              finishedAt: "2024-05-01T09:59:00Z",
              containerID: "docker://abc",
            },
          },
          ready: true,
          restartCount: 1,
          image: "nginx:1.27",
          imageID: "docker-pullable://nginx@sha256:1",
          containerID: "docker://def",
          started: true,
        },
      ],
      qosClass: "Burstable",
    },
  },
  {
    apiVersion: "v1",
    kind: "Service",
    metadata: META,
    spec: {
      ports: [
        { name: "http", protocol: "TCP", port: 80, targetPort: 8080, nodePort: 30080 },
        { name: "named", protocol: "TCP", port: 81, targetPort: "http" },
      ],
      selector: { app: "web" },
      clusterIP: "10.96.0.10",
      clusterIPs: ["10.96.0.10"],
      type: "NodePort",
      sessionAffinity: "None",
      externalTrafficPolicy: "Cluster",
      ipFamilies: ["IPv4"],
      ipFamilyPolicy: "SingleStack",
    },
    status: { loadBalancer: {} },
  },
  {
    apiVersion: "v1",
    kind: "Endpoints",
    metadata: META,
    subsets: [
      {
        addresses: [{ ip: "10.1.0.5", nodeName: "n1", targetRef: { kind: "Pod", namespace: "default", name: "p", uid: "u" } }],
        notReadyAddresses: [{ ip: "10.1.0.6" }],
        ports: [{ name: "http", port: 8080, protocol: "TCP" }],
      },
    ],
  },
  {
    apiVersion: "v1",
    kind: "ReplicationController",
    metadata: META,
    spec: { replicas: 0, minReadySeconds: 5, selector: { app: "web" }, template: TEMPLATE },
    status: {
      replicas: 2,
      fullyLabeledReplicas: 2,
      readyReplicas: 1,
      availableReplicas: 1,
      observedGeneration: 3,
      conditions: [{ type: "ReplicaFailure", status: "False", lastTransitionTime: "2024-05-01T10:00:00Z" }],
    },
  },
  {
    apiVersion: "v1",
    kind: "Event",
    metadata: META,
    involvedObject: { kind: "Pod", namespace: "default", name: "p", uid: "u", apiVersion: "v1", resourceVersion: "7", fieldPath: "spec.containers{web}" },
    reason: "Started",
    message: "Started container web",
    source: { component: "kubelet", host: "n1" },
    firstTimestamp: "2024-05-01T10:00:00Z",
    lastTimestamp: "2024-05-01T10:00:05Z",
    count: 2,
    type: "Normal",
    eventTime: "2024-05-01T10:00:00.123456Z",
    series: { count: 2, lastObservedTime: "2024-05-01T10:00:05.000001Z" },
    action: "Started",
    reportingComponent: "kubelet",
    reportingInstance: "n1",
  },
  { apiVersion: "v1", kind: "ConfigMap", metadata: META, data: { a: "b", "c.txt": "line\n" }, binaryData: { bin: "AAEC" }, immutable: false },
  { apiVersion: "v1", kind: "Binding", metadata: { name: "p", namespace: "default" }, target: { kind: "Node", name: "n1", apiVersion: "v1" } },
  {
    apiVersion: "apps/v1",
    kind: "DaemonSet",
    metadata: META,
    spec: {
      selector: { matchLabels: { app: "web" }, matchExpressions: [{ key: "tier", operator: "In", values: ["front"] }] },
      template: TEMPLATE,
      updateStrategy: { type: "RollingUpdate", rollingUpdate: { maxUnavailable: "10%", maxSurge: 0 } },
      revisionHistoryLimit: 10,
    },
    status: {
      currentNumberScheduled: 1,
      numberMisscheduled: 0,
      desiredNumberScheduled: 1,
      numberReady: 1,
      observedGeneration: 3,
      updatedNumberScheduled: 1,
      numberAvailable: 1,
    },
  },
  {
    apiVersion: "batch/v1",
    kind: "Job",
    metadata: META,
    spec: {
      parallelism: 2,
      completions: 4,
      backoffLimit: 6,
      activeDeadlineSeconds: 100,
      ttlSecondsAfterFinished: 0,
      completionMode: "NonIndexed",
      suspend: false,
      template: { ...TEMPLATE, spec: { ...POD_SPEC, restartPolicy: "Never" } },
    },
    status: {
      startTime: "2024-05-01T10:00:00Z",
      completionTime: "2024-05-01T10:01:00Z",
      active: 0,
      succeeded: 4,
      failed: 1,
      conditions: [{ type: "Complete", status: "True", lastProbeTime: "2024-05-01T10:01:00Z", lastTransitionTime: "2024-05-01T10:01:00Z" }],
    },
  },
  {
    apiVersion: "coordination.k8s.io/v1",
    kind: "Lease",
    metadata: META,
    spec: {
      holderIdentity: "a",
      leaseDurationSeconds: 15,
      acquireTime: "2024-05-01T10:00:00.000000Z",
      renewTime: "2024-05-01T10:00:10.500000Z",
      leaseTransitions: 0,
    },
  },
  { apiVersion: "autoscaling/v1", kind: "Scale", metadata: META, spec: { replicas: 3 }, status: { replicas: 2, selector: "app=web" } },
  {
    apiVersion: "policy/v1",
    kind: "Eviction",
    metadata: { name: "p", namespace: "default" },
    deleteOptions: { gracePeriodSeconds: 0, preconditions: { uid: "u" }, dryRun: ["All"] },
  },
  {
    apiVersion: "v1",
    kind: "Status",
    metadata: {},
    status: "Failure",
    message: 'pods "p" is invalid',
    reason: "Invalid",
    details: { name: "p", kind: "pods", causes: [{ reason: "FieldValueRequired", message: "Required value", field: "spec.containers" }], retryAfterSeconds: 1 },
    code: 422,
  },
  { apiVersion: "v1", kind: "DeleteOptions", gracePeriodSeconds: 30, propagationPolicy: "Foreground", orphanDependents: false },
  {
    apiVersion: "rbac.authorization.k8s.io/v1",
    kind: "ClusterRole",
    metadata: { name: "view", labels: { "kubernetes.io/bootstrapping": "rbac-defaults" } },
    rules: [
      { verbs: ["get", "list"], apiGroups: [""], resources: ["pods", "pods/log"], resourceNames: ["p"] },
      { verbs: ["get"], nonResourceURLs: ["/healthz"] },
    ],
    aggregationRule: { clusterRoleSelectors: [{ matchLabels: { "rbac.authorization.k8s.io/aggregate-to-view": "true" } }] },
  },
  {
    apiVersion: "rbac.authorization.k8s.io/v1",
    kind: "Role",
    metadata: { name: "r", namespace: "default" },
    rules: [{ verbs: ["*"], apiGroups: ["*"], resources: ["*"] }],
  },
  {
    apiVersion: "rbac.authorization.k8s.io/v1",
    kind: "RoleBinding",
    metadata: { name: "rb", namespace: "default" },
    subjects: [
      { kind: "User", apiGroup: "rbac.authorization.k8s.io", name: "alice" },
      { kind: "ServiceAccount", name: "default", namespace: "default" },
    ],
    roleRef: { apiGroup: "rbac.authorization.k8s.io", kind: "Role", name: "r" },
  },
  {
    apiVersion: "rbac.authorization.k8s.io/v1",
    kind: "ClusterRoleBinding",
    metadata: { name: "crb" },
    subjects: [{ kind: "Group", apiGroup: "rbac.authorization.k8s.io", name: "system:masters" }],
    roleRef: { apiGroup: "rbac.authorization.k8s.io", kind: "ClusterRole", name: "cluster-admin" },
  },
  {
    apiVersion: "v1",
    kind: "ServiceAccount",
    metadata: { name: "builder", namespace: "default" },
    secrets: [{ name: "tok", namespace: "default" }],
    imagePullSecrets: [{ name: "reg" }],
    automountServiceAccountToken: false,
  },
  {
    apiVersion: "certificates.k8s.io/v1",
    kind: "CertificateSigningRequest",
    metadata: { name: "node-csr-abc" },
    spec: {
      request: Buffer.from("-----BEGIN CERTIFICATE REQUEST-----\n").toString("base64"),
      signerName: "kubernetes.io/kube-apiserver-client-kubelet",
      expirationSeconds: 86400,
      usages: ["digital signature", "client auth"],
      username: "system:bootstrap:abcdef",
      groups: ["system:bootstrappers", "system:authenticated"],
    },
    status: {
      conditions: [{ type: "Approved", status: "True", reason: "AutoApproved", message: "ok", lastUpdateTime: "2026-11-26T10:00:00Z" }],
      certificate: Buffer.from("-----BEGIN CERTIFICATE-----\n").toString("base64"),
    },
  },
];

/** What survives the wire: Kubernetes JSON without undefined values (JSON drops them too). */
function plain(v: unknown): unknown {
  return JSON.parse(JSON.stringify(v)) as unknown;
}

/** Lists carry their items without apiVersion/kind on the wire (Go's typed lists do the same). */
function withoutItemTypes(list: KubeJson): KubeJson {
  return { ...list, items: (list["items"] as KubeJson[]).map(({ apiVersion: _a, kind: _k, ...rest }) => rest) };
}

/** Also drops nulls, as the protobuf form has no null. */
function withoutNulls(v: unknown): unknown {
  if (Array.isArray(v)) return v.map(withoutNulls);
  if (typeof v !== "object" || v === null) return v;
  return Object.fromEntries(
    Object.entries(v)
      .filter(([, x]) => x !== null)
      .map(([k, x]) => [k, withoutNulls(x)]),
  );
}

function is400(pattern: RegExp): (err: unknown) => boolean {
  return (err: unknown) => {
    assert.ok(err instanceof ApiError, String(err));
    assert.equal(err.status.code, 400);
    assert.match(err.status.message, pattern);
    return true;
  };
}

describe("kube-proto", () => {
  it("has a protobuf message for every served kind, its List, Binding, Scale, Eviction, Status, DeleteOptions", () => {
    for (const k of KINDS) {
      assert.ok(messageOfKind(k.apiVersion, k.kind), k.kind);
      assert.ok(messageOfKind(k.apiVersion, `${k.kind}List`), `${k.kind}List`);
    }
    for (const [v, k] of [
      ["v1", "Binding"],
      ["autoscaling/v1", "Scale"],
      ["policy/v1", "Eviction"],
      ["v1", "Status"],
      ["batch/v1", "DeleteOptions"],
    ]) {
      assert.ok(messageOfKind(v!, k!), k);
    }
    assert.equal(messageOfKind("v1", "PersistentVolumeClaim"), undefined);
  });

  for (const sample of SAMPLES) {
    it(`round-trips a ${String(sample["kind"])}: JSON → protobuf → identical JSON`, () => {
      const bytes = encodeObject(sample);
      assert.deepEqual(Buffer.from(bytes.subarray(0, 4)), Buffer.from(MAGIC));
      assert.deepEqual(decodeObject(bytes), withoutNulls(plain(sample)));
    });
  }

  it("round-trips a List of every kind (items without their apiVersion/kind)", () => {
    for (const sample of SAMPLES) {
      const info = KINDS.find((k) => k.kind === sample["kind"]);
      if (!info) continue;
      const list = {
        apiVersion: info.apiVersion,
        kind: `${info.kind}List`,
        metadata: { resourceVersion: "9", continue: "c", remainingItemCount: 2 },
        items: [sample, sample],
      };
      assert.deepEqual(decodeObject(encodeObject(list)), withoutNulls(plain(withoutItemTypes(list))));
    }
  });

  it("round-trips what choreo stores: fromKubeJson → toKubeJson → protobuf → the same JSON", () => {
    for (const sample of SAMPLES) {
      const info = KINDS.find((k) => k.kind === sample["kind"] && k.apiVersion === sample["apiVersion"]);
      if (!info) continue;
      const json = plain(toKubeJson(fromKubeJson(sample, { strict: false }))) as KubeJson;
      // "" is written by Go for every string and omitted by its JSON: decoded as absent (but kept in a list: apiGroups [""] is the core group).
      const expected = JSON.parse(
        JSON.stringify(json, function (this: unknown, _k, v: unknown) {
          return v === "" && !Array.isArray(this) ? undefined : v;
        }),
      ) as unknown;
      assert.deepEqual(decodeObject(encodeObject(json)), expected, info.kind);
    }
  });

  it("writes what Go writes: the envelope's four fields, a Time as whole seconds, maps sorted by key", () => {
    const bytes = encodeObject({
      apiVersion: "v1",
      kind: "ConfigMap",
      metadata: { name: "c", creationTimestamp: "2024-05-01T10:00:00Z" },
      data: { b: "2", a: "1" },
    });
    const r = protobuf.Reader.create(bytes.subarray(4));
    const tags: number[] = [];
    while (r.pos < r.len) {
      const tag = r.uint32();
      tags.push(tag);
      r.skipType(tag & 7);
    }
    assert.deepEqual(tags, [0x0a, 0x12, 0x1a, 0x22]);
    const raw = decodeMessage("k8s.io.apimachinery.pkg.runtime.Unknown", bytes.subarray(4))["raw"] as string;
    const cm = Buffer.from(raw, "base64");
    // ObjectMeta.creationTimestamp (8) holds Timestamp{seconds=1714557600} only.
    const ts = encodeMessage("k8s.io.apimachinery.pkg.apis.meta.v1.Time", "2024-05-01T10:00:00Z" as unknown as KubeJson);
    assert.deepEqual([...ts], [0x08, ...varint(1714557600)]);
    assert.ok(cm.includes(Buffer.from([0x42, ts.length, ...ts])));
    assert.ok(cm.indexOf(Buffer.from("a")) < cm.indexOf(Buffer.from("b")));
  });

  it("reads an empty Time, and Go's zero time, as absent", () => {
    const meta = "k8s.io.apimachinery.pkg.apis.meta.v1.ObjectMeta";
    assert.deepEqual(decodeMessage(meta, Uint8Array.from([0x0a, 0x01, 0x78, 0x42, 0x00])), { name: "x" });
    const zero = protobuf.Writer.create().uint32(0x08).int64(-62135596800).finish();
    assert.deepEqual(decodeMessage(meta, Uint8Array.from([0x42, zero.length, ...zero])), {});
  });

  it("formats and parses Go durations", () => {
    for (const [ns, s] of [
      [0, "0s"],
      [1.5e9, "1.5s"],
      [3600e9, "1h0m0s"],
      [90e9, "1m30s"],
      [3e8, "300ms"],
      [-2e9, "-2s"],
    ] as const) {
      assert.equal(formatDuration(ns), s);
      assert.equal(parseDuration(s), ns);
    }
    assert.throws(() => parseDuration("1x"), is400(/not a duration/));
  });

  it("frames watch events as the apiserver does: length, raw WatchEvent, object envelope inside", () => {
    const pod = SAMPLES[2]!;
    const frame = encodeWatchFrame("ADDED", pod);
    const n = new DataView(frame.buffer, frame.byteOffset).getUint32(0, false);
    assert.equal(n, frame.length - 4);
    assert.equal(frame[4], 0x0a); // WatchEvent.type, no magic in front
    const two = Buffer.concat([frame, encodeWatchFrame("DELETED", SAMPLES[7]!)]);
    const events = decodeWatchFrames(two);
    assert.deepEqual(
      events.map((e) => e.type),
      ["ADDED", "DELETED"],
    );
    assert.deepEqual(events[0]!.object, withoutNulls(plain(pod)));
    assert.throws(() => decodeWatchFrames(two.subarray(0, two.length - 3)), is400(/ends inside a frame/));
  });

  it("reads what kubectl 1.32 writes (request bodies captured from `kubectl create …`)", () => {
    // Go writes every non-pointer field: "" (dropped), 0 and false (kept), empty Times (absent) and structs ({}).
    const captured: [string, KubeJson][] = [
      [
        "azhzAAoPCgJ2MRIJQ29uZmlnTWFwEhsKEQoBYxIAGgAiACoAMgA4AEIAEgYKAWESAWIaACIA",
        { apiVersion: "v1", kind: "ConfigMap", metadata: { name: "c", generation: 0 }, data: { a: "b" } },
      ],
      [
        "azhzAAoNCgJ2MRIHU2VydmljZRJjChsKAXMSABoAIgAqADIAOABCAFoICgNhcHASAXMSQAobCgc4MC04MDgwEgNUQ1AYUCIHCAAQkD8aACgAEggKA2FwcBIBcxoAIglDbHVzdGVySVA6AEIAUgBaAGAAaAAaAgoAGgAiAA==",
        {
          apiVersion: "v1",
          kind: "Service",
          metadata: { name: "s", generation: 0, labels: { app: "s" } },
          spec: {
            ports: [{ name: "80-8080", protocol: "TCP", port: 80, targetPort: 8080, nodePort: 0 }],
            selector: { app: "s" },
            type: "ClusterIP",
            healthCheckNodePort: 0,
            publishNotReadyAddresses: false,
          },
          status: { loadBalancer: {} },
        },
      ],
      [
        "azhzAAoPCghiYXRjaC92MRIDSm9iEoIBChEKAWoSABoAIgAqADIAOABCABJjMmEKEAoAEgAaACIAKgAyADgAQgASTRIqCgFqEgdidXN5Ym94GgRlY2hvGgJoaSoAQgBqAHIAgAEAiAEAkAEAogEAGgVOZXZlcjIAQgBKAFIAWABgAGgAggEAigEAmgEAwgEAGgggACgAMAA6ABoAIgA=",
        {
          apiVersion: "batch/v1",
          kind: "Job",
          metadata: { name: "j", generation: 0 },
          spec: {
            template: {
              metadata: { generation: 0 },
              spec: {
                containers: [{ name: "j", image: "busybox", command: ["echo", "hi"], resources: {}, stdin: false, stdinOnce: false, tty: false }],
                restartPolicy: "Never",
                hostNetwork: false,
                hostPID: false,
                hostIPC: false,
              },
            },
          },
          status: { active: 0, succeeded: 0, failed: 0 },
        },
      ],
      [
        "azhzAAoPCgJ2MRIJTmFtZXNwYWNlEhkKEQoBeBIAGgAiACoAMgA4AEIAEgAaAgoAGgAiAA==",
        { apiVersion: "v1", kind: "Namespace", metadata: { name: "x", generation: 0 }, spec: {}, status: {} },
      ],
    ];
    for (const [b64, want] of captured) {
      const json = decodeObject(Buffer.from(b64, "base64"));
      assert.deepEqual(json, want);
      // And choreo takes it as it is (nothing unknown to its schema).
      const unknown: string[] = [];
      fromKubeJson(json, { unknownFields: unknown });
      assert.deepEqual(unknown, [], String(want["kind"]));
    }
  });

  describe("refuses bad input with a 400", () => {
    const good = encodeObject(SAMPLES[7]!);

    it("without the magic", () => {
      assert.throws(() => decodeObject(good.subarray(4)), is400(/magic/));
      assert.throws(() => decodeObject(Buffer.from('{"kind":"ConfigMap"}')), is400(/magic/));
      assert.throws(() => decodeObject(Uint8Array.from([0x6b, 0x38])), is400(/magic/));
    });

    it("truncated, at every length but the Unknown's field boundaries", () => {
      // Cut between two fields, a protobuf message is still whole (as in Go): after typeMeta, after raw, after contentEncoding.
      const boundaries = new Set([4 + 2 + good[5]!, good.length - 4, good.length - 2]);
      for (let len = 5; len < good.length; len++) {
        if (boundaries.has(len)) continue;
        assert.throws(() => decodeObject(good.subarray(0, len)), ApiError, `length ${len}`);
      }
    });

    it("of a kind with no protobuf form, or none at all", () => {
      const account = { ...SAMPLES[7]!, kind: "PersistentVolumeClaim" };
      assert.throws(() => encodeObject(account), is400(/no protobuf form/));
      const raw = Buffer.from(good);
      const idx = raw.indexOf(Buffer.from("ConfigMap"));
      raw.write("ConfigMup", idx);
      assert.throws(() => decodeObject(raw), is400(/no kind "ConfigMup" is registered for version "v1"/));
    });

    it("with an unknown field number, naming it and its message", () => {
      // ConfigMap with field 99 (varint) after its metadata.
      const cm = Buffer.concat([Buffer.from(encodeMessage("k8s.io.api.core.v1.ConfigMap", { metadata: { name: "c" } })), Buffer.from([0x98, 0x06, 0x01])]);
      const w = protobuf.Writer.create();
      w.uint32(0x0a).fork().uint32(0x0a).string("v1").uint32(0x12).string("ConfigMap").ldelim().uint32(0x12).bytes(cm);
      const body = Buffer.concat([Buffer.from(MAGIC), w.finish()]);
      assert.throws(() => decodeObject(body), is400(/field number 99 .*unknown in k8s\.io\.api\.core\.v1\.ConfigMap/));
    });

    it("with a wrong wire type", () => {
      // ConfigMap.metadata (1) as a varint.
      assert.throws(() => decodeMessage("k8s.io.api.core.v1.ConfigMap", Uint8Array.from([0x08, 0x01])), is400(/wire type 0, expected 2/));
    });

    it("with a content encoding (415)", () => {
      const w = protobuf.Writer.create();
      w.uint32(0x0a).fork().uint32(0x0a).string("v1").uint32(0x12).string("ConfigMap").ldelim().uint32(0x1a).string("gzip");
      assert.throws(
        () => decodeObject(Buffer.concat([Buffer.from(MAGIC), w.finish()])),
        (err: unknown) => err instanceof ApiError && err.status.code === 415,
      );
    });

    it("JSON that does not fit the message", () => {
      assert.throws(() => encodeObject({ ...SAMPLES[7]!, spec: {} }), is400(/unknown field "spec"/));
      assert.throws(
        () => encodeObject({ apiVersion: "v1", kind: "ConfigMap", metadata: { generation: "3" } }),
        is400(/metadata\.generation: expected an integer/),
      );
      assert.throws(
        () => encodeObject({ apiVersion: "coordination.k8s.io/v1", kind: "Lease", spec: { renewTime: "yesterday" } }),
        is400(/not an RFC 3339 time/),
      );
    });
  });
});

function varint(n: number): number[] {
  const out: number[] = [];
  while (n >= 0x80) {
    out.push((n % 0x80) | 0x80);
    n = Math.floor(n / 0x80);
  }
  out.push(n);
  return out;
}
