import { describe, it } from "node:test";
import assert from "node:assert/strict";
import { KINDS, kindByResource, type KindInfo } from "@choreo/kit";
import { toTable } from "./table.js";

const NOW = Date.parse("2026-01-01T12:00:00Z");
const CREATED = "2026-01-01T11:00:00Z"; // 60m before NOW

function kind(resource: string): KindInfo {
  const k = kindByResource(resource);
  assert.ok(k, resource);
  return k;
}

type Row = { cells: unknown[]; object?: Record<string, unknown> };
type Col = { name: string; type: string; format: string; description: string; priority: number };

function table(resource: string, objects: Record<string, unknown>[], includeObject: "None" | "Metadata" | "Object" = "None") {
  const t = toTable(kind(resource), objects, { includeObject, resourceVersion: "42", now: NOW });
  return { t, cols: t["columnDefinitions"] as Col[], rows: t["rows"] as Row[] };
}

/** The cells of one object keyed by column name. */
function cellsOf(resource: string, obj: Record<string, unknown>): Record<string, unknown> {
  const { cols, rows } = table(resource, [obj]);
  return Object.fromEntries(cols.map((c, i) => [c.name, rows[0].cells[i]]));
}

const meta = (name: string, more: Record<string, unknown> = {}) => ({ name, namespace: "default", uid: `uid-${name}`, creationTimestamp: CREATED, ...more });

const SAMPLES: Record<string, Record<string, unknown>> = {
  pods: {
    apiVersion: "v1",
    kind: "Pod",
    metadata: meta("web-1"),
    spec: {
      containers: [
        { name: "a", image: "nginx" },
        { name: "b", image: "redis" },
      ],
      nodeName: "n1",
    },
    status: {
      phase: "Running",
      podIP: "10.0.0.5",
      containerStatuses: [
        { name: "a", ready: true, restartCount: 0, state: { running: { startedAt: CREATED } } },
        { name: "b", ready: false, restartCount: 0, state: { running: { startedAt: CREATED } } },
      ],
    },
  },
  nodes: {
    apiVersion: "v1",
    kind: "Node",
    metadata: { name: "n1", creationTimestamp: CREATED, labels: { "node-role.kubernetes.io/control-plane": "" } },
    spec: { unschedulable: true },
    status: {
      conditions: [{ type: "Ready", status: "True" }],
      addresses: [{ type: "InternalIP", address: "192.168.1.10" }],
      nodeInfo: { kubeletVersion: "v1.32.0-choreo", osImage: "Debian GNU/Linux 12", kernelVersion: "6.1.0", containerRuntimeVersion: "docker://20.10" },
    },
  },
  services: {
    apiVersion: "v1",
    kind: "Service",
    metadata: meta("web"),
    spec: {
      type: "ClusterIP",
      clusterIP: "10.96.0.10",
      clusterIPs: ["10.96.0.10"],
      selector: { app: "web", tier: "fe" },
      ports: [
        { port: 80, protocol: "TCP" },
        { port: 443, protocol: "TCP" },
      ],
    },
  },
  endpoints: {
    apiVersion: "v1",
    kind: "Endpoints",
    metadata: meta("web"),
    subsets: [{ addresses: [{ ip: "10.0.0.1" }, { ip: "10.0.0.2" }], ports: [{ port: 80, protocol: "TCP" }] }],
  },
  replicationcontrollers: {
    apiVersion: "v1",
    kind: "ReplicationController",
    metadata: meta("web"),
    spec: { replicas: 3, selector: { app: "web" }, template: { spec: { containers: [{ name: "nginx", image: "nginx:1" }] } } },
    status: { replicas: 3, readyReplicas: 2 },
  },
  daemonsets: {
    apiVersion: "apps/v1",
    kind: "DaemonSet",
    metadata: meta("agent"),
    spec: { selector: { matchLabels: { app: "agent" } }, template: { spec: { nodeSelector: { disk: "ssd" }, containers: [{ name: "a", image: "busybox" }] } } },
    status: { desiredNumberScheduled: 3, currentNumberScheduled: 3, numberReady: 2, updatedNumberScheduled: 3, numberAvailable: 2 },
  },
  replicasets: {
    apiVersion: "apps/v1",
    kind: "ReplicaSet",
    metadata: meta("web-5d4f"),
    spec: { replicas: 3, selector: { matchLabels: { app: "web" } }, template: { spec: { containers: [{ name: "nginx", image: "nginx:1" }] } } },
    status: { replicas: 3, readyReplicas: 2 },
  },
  deployments: {
    apiVersion: "apps/v1",
    kind: "Deployment",
    metadata: meta("web"),
    spec: {
      replicas: 3,
      selector: { matchLabels: { app: "web" } },
      template: {
        spec: {
          containers: [
            { name: "nginx", image: "nginx:1" },
            { name: "log", image: "busybox" },
          ],
        },
      },
    },
    status: { replicas: 3, updatedReplicas: 3, readyReplicas: 2, availableReplicas: 1 },
  },
  jobs: {
    apiVersion: "batch/v1",
    kind: "Job",
    metadata: meta("pi"),
    spec: { completions: 1, selector: { matchLabels: { "job-name": "pi" } }, template: { spec: { containers: [{ name: "pi", image: "perl" }] } } },
    status: { succeeded: 1, startTime: "2026-01-01T11:00:00Z", completionTime: "2026-01-01T11:00:42Z", conditions: [{ type: "Complete", status: "True" }] },
  },
  cronjobs: {
    apiVersion: "batch/v1",
    kind: "CronJob",
    metadata: meta("tick"),
    spec: {
      schedule: "*/1 * * * *",
      timeZone: "Europe/Berlin",
      suspend: false,
      jobTemplate: { spec: { template: { spec: { containers: [{ name: "tick", image: "busybox" }] } } } },
    },
    status: { active: [{ kind: "Job", name: "tick-1", namespace: "default" }], lastScheduleTime: "2026-01-01T11:59:00Z" },
  },
  certificatesigningrequests: {
    apiVersion: "certificates.k8s.io/v1",
    kind: "CertificateSigningRequest",
    metadata: meta("node-csr-1"),
    spec: { signerName: "kubernetes.io/kube-apiserver-client-kubelet", username: "system:bootstrap:abcdef", expirationSeconds: 86400, request: "" },
    status: { conditions: [{ type: "Approved", status: "True" }], certificate: "LS0t" },
  },
  poddisruptionbudgets: {
    apiVersion: "policy/v1",
    kind: "PodDisruptionBudget",
    metadata: meta("web"),
    spec: { minAvailable: 3, selector: { matchLabels: { app: "web" } } },
    status: { disruptionsAllowed: 1, currentHealthy: 4, desiredHealthy: 3, expectedPods: 4, observedGeneration: 1 },
  },
  horizontalpodautoscalers: {
    apiVersion: "autoscaling/v2",
    kind: "HorizontalPodAutoscaler",
    metadata: meta("web"),
    spec: {
      scaleTargetRef: { kind: "Deployment", name: "web", apiVersion: "apps/v1" },
      minReplicas: 1,
      maxReplicas: 5,
      metrics: [{ type: "Resource", resource: { name: "cpu", target: { type: "Utilization", averageUtilization: 50 } } }],
    },
    status: { currentReplicas: 2, desiredReplicas: 2, currentMetrics: [{ type: "Resource", resource: { name: "cpu", current: { averageUtilization: 31 } } }] },
  },
  namespaces: { apiVersion: "v1", kind: "Namespace", metadata: { name: "default", creationTimestamp: CREATED }, status: { phase: "Active" } },
  events: {
    apiVersion: "v1",
    kind: "Event",
    metadata: meta("web-1.abc"),
    involvedObject: { kind: "Pod", name: "web-1", namespace: "default", fieldPath: "spec.containers{a}" },
    reason: "Scheduled",
    message: "Successfully assigned default/web-1 to n1 ",
    type: "Normal",
    source: { component: "scheduler" },
    firstTimestamp: "2026-01-01T11:59:00Z",
    lastTimestamp: "2026-01-01T11:59:30Z",
    count: 2,
  },
  leases: { apiVersion: "coordination.k8s.io/v1", kind: "Lease", metadata: meta("n1"), spec: { holderIdentity: "n1", leaseDurationSeconds: 40 } },
  configmaps: { apiVersion: "v1", kind: "ConfigMap", metadata: meta("game"), data: { "game.properties": "lives=3" }, binaryData: { "logo.bin": "AA==" } },
  secrets: { apiVersion: "v1", kind: "Secret", metadata: meta("db"), type: "Opaque", data: { password: "aHVudGVyMg==" } },
  roles: {
    apiVersion: "rbac.authorization.k8s.io/v1",
    kind: "Role",
    metadata: meta("reader"),
    rules: [{ verbs: ["get"], apiGroups: [""], resources: ["pods"] }],
  },
  clusterroles: { apiVersion: "rbac.authorization.k8s.io/v1", kind: "ClusterRole", metadata: { name: "view", creationTimestamp: CREATED }, rules: [] },
  rolebindings: {
    apiVersion: "rbac.authorization.k8s.io/v1",
    kind: "RoleBinding",
    metadata: meta("read"),
    roleRef: { apiGroup: "rbac.authorization.k8s.io", kind: "Role", name: "reader" },
    subjects: [{ kind: "User", apiGroup: "rbac.authorization.k8s.io", name: "alice" }],
  },
  clusterrolebindings: {
    apiVersion: "rbac.authorization.k8s.io/v1",
    kind: "ClusterRoleBinding",
    metadata: { name: "admins", creationTimestamp: CREATED },
    roleRef: { apiGroup: "rbac.authorization.k8s.io", kind: "ClusterRole", name: "cluster-admin" },
    subjects: [{ kind: "Group", apiGroup: "rbac.authorization.k8s.io", name: "system:masters" }],
  },
  serviceaccounts: { apiVersion: "v1", kind: "ServiceAccount", metadata: meta("default"), secrets: [{ name: "token" }] },
};

describe("toTable shape", () => {
  it("certificatesigningrequests: kubectl's SIGNERNAME REQUESTOR REQUESTEDDURATION CONDITION (Pending, Approved,Issued)", () => {
    assert.deepEqual(cellsOf("certificatesigningrequests", SAMPLES["certificatesigningrequests"]), {
      Name: "node-csr-1",
      Age: "60m",
      SignerName: "kubernetes.io/kube-apiserver-client-kubelet",
      Requestor: "system:bootstrap:abcdef",
      RequestedDuration: "1d",
      Condition: "Approved,Issued",
    });
    assert.equal(cellsOf("certificatesigningrequests", { metadata: meta("p"), spec: {} })["Condition"], "Pending");
  });

  it("poddisruptionbudgets: kubectl's MIN AVAILABLE, MAX UNAVAILABLE (N/A when unset), ALLOWED DISRUPTIONS", () => {
    assert.deepEqual(cellsOf("poddisruptionbudgets", SAMPLES["poddisruptionbudgets"]), {
      Name: "web",
      "Min Available": "3",
      "Max Unavailable": "N/A",
      "Allowed Disruptions": 1,
      Age: "60m",
    });
    assert.deepEqual(cellsOf("poddisruptionbudgets", { metadata: meta("p"), spec: { maxUnavailable: "25%" } })["Max Unavailable"], "25%");
  });

  it("has a sample for every kind", () => {
    for (const k of KINDS) assert.ok(SAMPLES[k.resource], `sample for ${k.resource}`);
  });

  for (const k of KINDS) {
    it(`${k.resource}: cells count equals columns count, Name first (or Last Seen for events)`, () => {
      const { t, cols, rows } = table(k.resource, [SAMPLES[k.resource], { metadata: { name: "empty" } }]);
      assert.equal(t["kind"], "Table");
      assert.equal(t["apiVersion"], "meta.k8s.io/v1");
      assert.deepEqual(t["metadata"], { resourceVersion: "42" });
      assert.equal(rows.length, 2);
      for (const r of rows) assert.equal(r.cells.length, cols.length);
      for (const c of cols) {
        assert.ok([0, 1].includes(c.priority));
        assert.equal(typeof c.format, "string");
        assert.ok(c.description.length > 0);
      }
      assert.equal(cols[0].name, k.kind === "Event" ? "Last Seen" : "Name");
    });
  }

  it("includeObject: None omits, Metadata gives PartialObjectMetadata, Object the whole object", () => {
    const pod = SAMPLES["pods"];
    assert.equal(table("pods", [pod], "None").rows[0].object, undefined);
    assert.ok(!("object" in table("pods", [pod], "None").rows[0]));
    assert.deepEqual(table("pods", [pod], "Metadata").rows[0].object, {
      kind: "PartialObjectMetadata",
      apiVersion: "meta.k8s.io/v1",
      metadata: pod["metadata"],
    });
    assert.deepEqual(table("pods", [pod], "Object").rows[0].object, pod);
  });

  it("carries continue", () => {
    const t = toTable(kind("pods"), [], { includeObject: "None", resourceVersion: "7", continue: "abc" });
    assert.deepEqual(t["metadata"], { resourceVersion: "7", continue: "abc" });
    assert.deepEqual(t["rows"], []);
  });

  it("kinds without a printer get NAME and AGE", () => {
    const t = toTable({ kind: "Widget" }, [{ metadata: { name: "w", creationTimestamp: CREATED } }], { includeObject: "None", resourceVersion: "1", now: NOW });
    assert.deepEqual(
      (t["columnDefinitions"] as Col[]).map((c) => c.name),
      ["Name", "Age"],
    );
    assert.deepEqual((t["rows"] as Row[])[0].cells, ["w", "60m"]);
  });
});

describe("pod columns", () => {
  it("running pod with one of two ready", () => {
    assert.deepEqual(cellsOf("pods", SAMPLES["pods"]), {
      Name: "web-1",
      Ready: "1/2",
      Status: "Running",
      Restarts: "0",
      Age: "60m",
      IP: "10.0.0.5",
      Node: "n1",
      "Nominated Node": "<none>",
      "Readiness Gates": "<none>",
    });
  });
  it("pending pod without status", () => {
    const c = cellsOf("pods", { metadata: meta("p"), spec: { containers: [{ name: "a" }] }, status: { phase: "Pending" } });
    assert.equal(c["Ready"], "0/1");
    assert.equal(c["Status"], "Pending");
    assert.equal(c["IP"], "<none>");
    assert.equal(c["Node"], "<none>");
  });
  it("waiting reasons win: ContainerCreating, CrashLoopBackOff with restarts", () => {
    const creating = cellsOf("pods", {
      metadata: meta("p"),
      spec: { containers: [{ name: "a" }] },
      status: { phase: "Pending", containerStatuses: [{ name: "a", state: { waiting: { reason: "ContainerCreating" } } }] },
    });
    assert.equal(creating["Status"], "ContainerCreating");
    const crash = cellsOf("pods", {
      metadata: meta("p"),
      spec: { containers: [{ name: "a" }] },
      status: {
        phase: "Running",
        containerStatuses: [
          {
            name: "a",
            restartCount: 4,
            state: { waiting: { reason: "CrashLoopBackOff" } },
            lastState: { terminated: { exitCode: 1, finishedAt: "2026-01-01T11:59:15Z" } },
          },
        ],
      },
    });
    assert.equal(crash["Status"], "CrashLoopBackOff");
    assert.equal(crash["Restarts"], "4 (45s ago)");
  });
  it("Terminating when deletionTimestamp is set; status.reason otherwise", () => {
    const c = cellsOf("pods", { metadata: meta("p", { deletionTimestamp: CREATED }), spec: { containers: [] }, status: { phase: "Running" } });
    assert.equal(c["Status"], "Terminating");
    const evicted = cellsOf("pods", { metadata: meta("p"), status: { phase: "Failed", reason: "Evicted" } });
    assert.equal(evicted["Status"], "Evicted");
  });
  it("terminated containers: Completed, ExitCode", () => {
    const done = cellsOf("pods", {
      metadata: meta("p"),
      spec: { containers: [{ name: "a" }] },
      status: { phase: "Succeeded", containerStatuses: [{ name: "a", state: { terminated: { exitCode: 0, reason: "Completed" } } }] },
    });
    assert.equal(done["Status"], "Completed");
    const failed = cellsOf("pods", {
      metadata: meta("p"),
      spec: { containers: [{ name: "a" }] },
      status: { phase: "Failed", containerStatuses: [{ name: "a", state: { terminated: { exitCode: 3 } } }] },
    });
    assert.equal(failed["Status"], "ExitCode:3");
  });
  it("init containers: Init:0/1 and Init:Error", () => {
    const spec = { initContainers: [{ name: "i" }], containers: [{ name: "a" }] };
    const waiting = cellsOf("pods", {
      metadata: meta("p"),
      spec,
      status: { phase: "Pending", initContainerStatuses: [{ name: "i", state: { running: {} } }] },
    });
    assert.equal(waiting["Status"], "Init:0/1");
    const err = cellsOf("pods", {
      metadata: meta("p"),
      spec,
      status: { phase: "Pending", initContainerStatuses: [{ name: "i", state: { terminated: { exitCode: 1, reason: "Error" } } }] },
    });
    assert.equal(err["Status"], "Init:Error");
  });
  it("readiness gates count the true conditions", () => {
    const c = cellsOf("pods", {
      metadata: meta("p"),
      spec: { readinessGates: [{ conditionType: "x" }, { conditionType: "y" }] },
      status: { conditions: [{ type: "x", status: "True" }] },
    });
    assert.equal(c["Readiness Gates"], "1/2");
  });
});

describe("node columns", () => {
  it("ready, cordoned, with a role", () => {
    assert.deepEqual(cellsOf("nodes", SAMPLES["nodes"]), {
      Name: "n1",
      Status: "Ready,SchedulingDisabled",
      Roles: "control-plane",
      Age: "60m",
      Version: "v1.32.0-choreo",
      "Internal-IP": "192.168.1.10",
      "External-IP": "<none>",
      "OS-Image": "Debian GNU/Linux 12",
      "Kernel-Version": "6.1.0",
      "Container-Runtime": "docker://20.10",
    });
  });
  it("NotReady, Unknown, <none> roles", () => {
    const notReady = cellsOf("nodes", { metadata: { name: "n" }, status: { conditions: [{ type: "Ready", status: "False" }] } });
    assert.equal(notReady["Status"], "NotReady");
    assert.equal(notReady["Roles"], "<none>");
    assert.equal(notReady["OS-Image"], "<unknown>");
    assert.equal(cellsOf("nodes", { metadata: { name: "n" } })["Status"], "Unknown");
  });
});

describe("service and endpoints columns", () => {
  it("cluster IP service", () => {
    assert.deepEqual(cellsOf("services", SAMPLES["services"]), {
      Name: "web",
      Type: "ClusterIP",
      "Cluster-IP": "10.96.0.10",
      "External-IP": "<none>",
      "Port(s)": "80/TCP,443/TCP",
      Age: "60m",
      Selector: "app=web,tier=fe",
    });
  });
  it("node ports, load balancers, headless", () => {
    const np = cellsOf("services", {
      metadata: meta("s"),
      spec: { type: "NodePort", clusterIP: "10.96.0.2", ports: [{ port: 80, nodePort: 30080, protocol: "TCP" }] },
    });
    assert.equal(np["Port(s)"], "80:30080/TCP");
    const lb = cellsOf("services", { metadata: meta("s"), spec: { type: "LoadBalancer", clusterIP: "10.96.0.3" } });
    assert.equal(lb["External-IP"], "<pending>");
    assert.equal(lb["Port(s)"], "<none>");
    assert.equal(lb["Selector"], "<none>");
    const headless = cellsOf("services", { metadata: meta("s"), spec: { clusterIP: "None" } });
    assert.equal(headless["Cluster-IP"], "None");
    assert.equal(headless["Type"], "ClusterIP");
  });
  it("endpoints: list, max three plus more, none", () => {
    assert.equal(cellsOf("endpoints", SAMPLES["endpoints"])["Endpoints"], "10.0.0.1:80,10.0.0.2:80");
    const many = cellsOf("endpoints", {
      metadata: meta("e"),
      subsets: [{ addresses: [1, 2, 3, 4, 5].map((i) => ({ ip: `10.0.0.${i}` })), ports: [{ port: 80 }] }],
    });
    assert.equal(many["Endpoints"], "10.0.0.1:80,10.0.0.2:80,10.0.0.3:80 + 2 more...");
    assert.equal(cellsOf("endpoints", { metadata: meta("e") })["Endpoints"], "<none>");
    const noPorts = cellsOf("endpoints", { metadata: meta("e"), subsets: [{ addresses: [{ ip: "10.0.0.9" }] }] });
    assert.equal(noPorts["Endpoints"], "10.0.0.9");
  });
});

describe("workload columns", () => {
  it("replication controller", () => {
    assert.deepEqual(cellsOf("replicationcontrollers", SAMPLES["replicationcontrollers"]), {
      Name: "web",
      Desired: 3,
      Current: 3,
      Ready: 2,
      Age: "60m",
      Containers: "nginx",
      Images: "nginx:1",
      Selector: "app=web",
    });
  });
  it("daemon set", () => {
    assert.deepEqual(cellsOf("daemonsets", SAMPLES["daemonsets"]), {
      Name: "agent",
      Desired: 3,
      Current: 3,
      Ready: 2,
      "Up-to-date": 3,
      Available: 2,
      "Node Selector": "disk=ssd",
      Age: "60m",
      Containers: "a",
      Images: "busybox",
      Selector: "app=agent",
    });
  });
  it("replica set: DESIRED CURRENT READY, desired 1 when unset", () => {
    assert.deepEqual(cellsOf("replicasets", SAMPLES["replicasets"]), {
      Name: "web-5d4f",
      Desired: 3,
      Current: 3,
      Ready: 2,
      Age: "60m",
      Containers: "nginx",
      Images: "nginx:1",
      Selector: "app=web",
    });
    assert.equal(cellsOf("replicasets", { metadata: meta("r"), spec: {} })["Desired"], 1);
  });
  it("deployment: READY as ready/desired, UP-TO-DATE, AVAILABLE", () => {
    assert.deepEqual(cellsOf("deployments", SAMPLES["deployments"]), {
      Name: "web",
      Ready: "2/3",
      "Up-to-date": 3,
      Available: 1,
      Age: "60m",
      Containers: "nginx,log",
      Images: "nginx:1,busybox",
      Selector: "app=web",
    });
    assert.equal(cellsOf("deployments", { metadata: meta("d"), spec: { replicas: 0 } })["Ready"], "0/0");
    assert.equal(cellsOf("deployments", { metadata: meta("d"), spec: {} })["Ready"], "0/1");
  });
  it("job: complete, running, failed, suspended; completions and duration", () => {
    const done = cellsOf("jobs", SAMPLES["jobs"]);
    assert.deepEqual([done["Status"], done["Completions"], done["Duration"], done["Selector"]], ["Complete", "1/1", "42s", "job-name=pi"]);
    const running = cellsOf("jobs", { metadata: meta("j"), spec: { parallelism: 2 }, status: { startTime: "2026-01-01T11:58:00Z" } });
    assert.deepEqual([running["Status"], running["Completions"], running["Duration"]], ["Running", "0/1 of 2", "2m"]);
    assert.equal(cellsOf("jobs", { metadata: meta("j"), status: { conditions: [{ type: "Failed", status: "True" }] } })["Status"], "Failed");
    const suspended = cellsOf("jobs", { metadata: meta("j"), spec: { completions: 3 }, status: { conditions: [{ type: "Suspended", status: "True" }] } });
    assert.deepEqual([suspended["Status"], suspended["Completions"], suspended["Duration"]], ["Suspended", "0/3", ""]);
  });
  it("cronjob: schedule, time zone, suspend, active count, last schedule", () => {
    assert.deepEqual(cellsOf("cronjobs", SAMPLES["cronjobs"]), {
      Name: "tick",
      Schedule: "*/1 * * * *",
      Timezone: "Europe/Berlin",
      Suspend: "False",
      Active: 1,
      "Last Schedule": "60s",
      Age: "60m",
      Containers: "tick",
      Images: "busybox",
      Selector: "<none>",
    });
    const bare = cellsOf("cronjobs", { metadata: meta("c"), spec: { schedule: "@hourly" } });
    assert.deepEqual([bare["Timezone"], bare["Suspend"], bare["Active"], bare["Last Schedule"]], ["<none>", "<unset>", 0, "<none>"]);
  });
  it("label selectors with expressions", () => {
    const c = cellsOf("daemonsets", {
      metadata: meta("d"),
      spec: {
        selector: {
          matchLabels: { a: "1" },
          matchExpressions: [
            { key: "b", operator: "In", values: ["y", "x"] },
            { key: "c", operator: "DoesNotExist" },
          ],
        },
      },
    });
    assert.equal(c["Selector"], "a=1,b in (x,y),!c");
    assert.equal(c["Node Selector"], "<none>");
  });
});

describe("namespace, event, lease columns", () => {
  it("namespace", () => assert.deepEqual(cellsOf("namespaces", SAMPLES["namespaces"]), { Name: "default", Status: "Active", Age: "60m" }));
  it("event", () => {
    assert.deepEqual(cellsOf("events", SAMPLES["events"]), {
      "Last Seen": "30s",
      Type: "Normal",
      Reason: "Scheduled",
      Object: "pod/web-1",
      Subobject: "spec.containers{a}",
      Source: "scheduler",
      Message: "Successfully assigned default/web-1 to n1",
      "First Seen": "60s",
      Count: 2,
      Name: "web-1.abc",
    });
    const bare = cellsOf("events", {
      metadata: meta("e"),
      involvedObject: { kind: "Node" },
      eventTime: "2026-01-01T11:59:50Z",
      reportingComponent: "kubelet",
      reportingInstance: "n1",
    });
    assert.deepEqual([bare["Last Seen"], bare["Object"], bare["Count"], bare["Source"]], ["10s", "node", 1, "kubelet, n1"]);
  });
  it("lease", () => assert.deepEqual(cellsOf("leases", SAMPLES["leases"]), { Name: "n1", Holder: "n1", Age: "60m" }));
});
