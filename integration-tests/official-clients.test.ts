// test-tier: servers
// The two official clients read every answer: one object of each served kind
// (Namespace, Node, Pod, Service, Endpoints, ReplicationController, Event,
// ConfigMap, Secret, DaemonSet, ReplicaSet, Deployment, Job, CronJob, PodDisruptionBudget, HorizontalPodAutoscaler, Lease) is created on a real cluster (api +
// nats-server + redis-server, scheduler, replication, endpoints and a hollow
// node agent) and read back — get, list, watch event, status and scale
// subresources — through (a) the official Python client (Debian's
// python3-kubernetes, /usr/bin/python3), whose typed models refuse a missing
// required field, and (b) @kubernetes/client-node's typed APIs.
import assert from "node:assert/strict";
import { execFile } from "node:child_process";
import path from "node:path";
import { after, before, describe, it } from "node:test";
import * as k8s from "@kubernetes/client-node";
import { waitFor } from "@choreo/kit/testing";
import { startCluster, type TestCluster } from "./support/cluster.js";
import { http } from "./support/http.js";
import { writeKubeconfig } from "./support/kubectl.js";

const NS = "oc";
const WAIT = { timeoutMs: 60_000, intervalMs: 200 };
const PYTHON = "/usr/bin/python3";
const SCRIPT = path.join(import.meta.dirname, "support", "official_clients.py");

const template = { metadata: { labels: { app: "web" } }, spec: { containers: [{ name: "c", image: "busybox" }] } };

/** One object of each served kind (Node comes from the node agent). */
const OBJECTS: [string, Record<string, unknown>][] = [
  [`/api/v1/namespaces/${NS}/pods`, { apiVersion: "v1", kind: "Pod", metadata: { name: "web", labels: { app: "web" } }, spec: template.spec }],
  [
    `/api/v1/namespaces/${NS}/services`,
    { apiVersion: "v1", kind: "Service", metadata: { name: "web" }, spec: { selector: { app: "web" }, ports: [{ port: 80, targetPort: 8080 }] } },
  ],
  [
    `/api/v1/namespaces/${NS}/replicationcontrollers`,
    {
      apiVersion: "v1",
      kind: "ReplicationController",
      metadata: { name: "rc" },
      spec: { replicas: 1, selector: { app: "rc" }, template: { ...template, metadata: { labels: { app: "rc" } } } },
    },
  ],
  [
    `/api/v1/namespaces/${NS}/events`,
    {
      apiVersion: "v1",
      kind: "Event",
      metadata: { name: "ev" },
      involvedObject: { kind: "Pod", namespace: NS, name: "web" },
      reason: "Tested",
      message: "by the official clients",
      type: "Normal",
    },
  ],
  [`/api/v1/namespaces/${NS}/configmaps`, { apiVersion: "v1", kind: "ConfigMap", metadata: { name: "cfg" }, data: { a: "b" } }],
  [
    `/apis/apps/v1/namespaces/${NS}/daemonsets`,
    {
      apiVersion: "apps/v1",
      kind: "DaemonSet",
      metadata: { name: "ds" },
      spec: { selector: { matchLabels: { app: "ds" } }, template: { ...template, metadata: { labels: { app: "ds" } } } },
    },
  ],
  [
    `/apis/apps/v1/namespaces/${NS}/replicasets`,
    {
      apiVersion: "apps/v1",
      kind: "ReplicaSet",
      metadata: { name: "rs" },
      spec: { replicas: 1, selector: { matchLabels: { app: "rs" } }, template: { ...template, metadata: { labels: { app: "rs" } } } },
    },
  ],
  [
    `/apis/apps/v1/namespaces/${NS}/deployments`,
    {
      apiVersion: "apps/v1",
      kind: "Deployment",
      metadata: { name: "deploy" },
      spec: { replicas: 1, selector: { matchLabels: { app: "deploy" } }, template: { ...template, metadata: { labels: { app: "deploy" } } } },
    },
  ],
  [
    `/apis/batch/v1/namespaces/${NS}/jobs`,
    { apiVersion: "batch/v1", kind: "Job", metadata: { name: "job" }, spec: { template: { ...template, spec: { ...template.spec, restartPolicy: "Never" } } } },
  ],
  [`/api/v1/namespaces/${NS}/secrets`, { apiVersion: "v1", kind: "Secret", metadata: { name: "sec" }, stringData: { password: "hunter2" } }],
  [
    `/apis/batch/v1/namespaces/${NS}/cronjobs`,
    {
      apiVersion: "batch/v1",
      kind: "CronJob",
      metadata: { name: "cj" },
      spec: { schedule: "0 0 1 1 *", jobTemplate: { spec: { template: { ...template, spec: { ...template.spec, restartPolicy: "Never" } } } } },
    },
  ],
  [
    `/apis/policy/v1/namespaces/${NS}/poddisruptionbudgets`,
    { apiVersion: "policy/v1", kind: "PodDisruptionBudget", metadata: { name: "pdb" }, spec: { minAvailable: 1, selector: { matchLabels: { app: "rs" } } } },
  ],
  [
    `/apis/autoscaling/v2/namespaces/${NS}/horizontalpodautoscalers`,
    {
      apiVersion: "autoscaling/v2",
      kind: "HorizontalPodAutoscaler",
      metadata: { name: "hpa" },
      spec: { scaleTargetRef: { apiVersion: "apps/v1", kind: "Deployment", name: "deploy" }, minReplicas: 1, maxReplicas: 3 },
    },
  ],
  [
    `/apis/coordination.k8s.io/v1/namespaces/${NS}/leases`,
    { apiVersion: "coordination.k8s.io/v1", kind: "Lease", metadata: { name: "lease" }, spec: { holderIdentity: "me", leaseDurationSeconds: 15 } },
  ],
];

function python(...args: string[]): Promise<{ code: number; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    execFile(PYTHON, [SCRIPT, ...args], { timeout: 120_000 }, (err, stdout, stderr) => {
      resolve({ code: err ? ((err as { code?: number }).code ?? 1) : 0, stdout, stderr });
    });
  });
}

describe("the official clients read every answer", () => {
  let c: TestCluster;
  let kubeconfig: string;
  let node = "";

  before(async () => {
    c = await startCluster({
      actors: [
        { name: "scheduler" },
        { name: "replication" },
        { name: "endpoints" },
        { name: "node-agent", args: ["--hollow-nodes", "1", "--node-name-prefix", "oc-"] },
      ],
    });
    kubeconfig = writeKubeconfig(c);
    const ns = await http(c.httpUrl, c.token, "POST", "/api/v1/namespaces", { apiVersion: "v1", kind: "Namespace", metadata: { name: NS } });
    assert.equal(ns.status, 201, ns.text);
    for (const [url, body] of OBJECTS) {
      const r = await http(c.httpUrl, c.token, "POST", url, body);
      assert.equal(r.status, 201, `${url}: ${r.text}`);
    }
    // A running pod has container statuses (restartCount 0, ready…); the node its nodeInfo.
    await waitFor(
      async () => {
        const p = await http(c.httpUrl, c.token, "GET", `/api/v1/namespaces/${NS}/pods/web`);
        const statuses = (p.json["status"] as { containerStatuses?: unknown[] } | undefined)?.containerStatuses;
        return statuses?.length ? true : undefined;
      },
      { ...WAIT, message: "pod web has container statuses" },
    );
    const nodes = await http(c.httpUrl, c.token, "GET", "/api/v1/nodes");
    node = ((nodes.json["items"] as { metadata: { name: string } }[])[0]?.metadata.name ?? "") || assert.fail(nodes.text);
  });

  after(async () => {
    await c?.stop();
  });

  it("the Python client deserializes every kind, list, watch event, status and scale into its models", async () => {
    const r = await python(kubeconfig, NS, node);
    assert.equal(r.code, 0, `${r.stderr}\n${r.stdout}`);
    const facts = JSON.parse(r.stdout.trim().split("\n").pop() ?? "{}") as Record<string, unknown>;
    assert.equal(facts["pod.restartCount"], 0);
    assert.equal(facts["node.bootID"], "");
    assert.equal(typeof facts["node.kubeletPort"], "number");
    assert.equal(facts["watch.type"], "ADDED");
    assert.equal(facts["watch.kind"], "V1Pod");
    assert.equal(typeof facts["rc.status.replicas"], "number");
    assert.equal(typeof facts["scale.status.replicas"], "number");
    assert.equal(facts["scale.spec.replicas"], 3);
    assert.equal(facts["job.status"], true);
    assert.equal(typeof facts["ds.numberReady"], "number");
    assert.equal(typeof facts["rs.status.replicas"], "number");
    assert.equal(facts["deploy.maxSurge"], "25%");
    assert.equal(facts["deploy.scale.selector"], "app=deploy");
    assert.equal(facts["event.reportingComponent"], "");
    assert.equal(facts["secret.password"], "hunter2");
    assert.equal(facts["secret.type"], "Opaque");
    assert.equal(facts["cj.concurrencyPolicy"], "Allow");
    assert.equal(facts["cj.successfulJobsHistoryLimit"], 3);
    assert.equal(facts["pdb.minAvailable"], 1);
    assert.equal(typeof facts["pdb.disruptionsAllowed"], "number");
    assert.equal(facts["hpa.v1.maxReplicas"], 3);
    assert.equal(facts["hpa.v1.target"], 80);
  });

  it("@kubernetes/client-node reads every kind, list, watch event, status and scale", async () => {
    const kc = new k8s.KubeConfig();
    kc.loadFromFile(kubeconfig);
    const core = kc.makeApiClient(k8s.CoreV1Api);
    const apps = kc.makeApiClient(k8s.AppsV1Api);
    const batch = kc.makeApiClient(k8s.BatchV1Api);
    const coord = kc.makeApiClient(k8s.CoordinationV1Api);
    const namespace = NS;

    assert.equal((await core.readNamespace({ name: NS })).metadata?.name, NS);
    assert.ok((await core.listNamespace()).items.some((n) => n.metadata?.name === NS));
    const n = await core.readNode({ name: node });
    assert.equal(n.status?.nodeInfo?.bootID, "");
    assert.equal(typeof n.status?.daemonEndpoints?.kubeletEndpoint?.Port, "number");
    assert.ok((await core.listNode()).items.length >= 1);

    const pod = await core.readNamespacedPod({ name: "web", namespace });
    assert.equal(pod.status?.containerStatuses?.[0]?.restartCount, 0);
    assert.ok(pod.metadata?.creationTimestamp instanceof Date);
    assert.equal((await core.readNamespacedPodStatus({ name: "web", namespace })).metadata?.name, "web");
    assert.ok((await core.listNamespacedPod({ namespace })).items.some((p) => p.metadata?.name === "web"));

    const svc = await core.readNamespacedService({ name: "web", namespace });
    assert.equal(JSON.stringify(svc.status?.loadBalancer), "{}");
    assert.equal((await core.readNamespacedServiceStatus({ name: "web", namespace })).spec?.ports?.[0]?.port, 80);
    assert.equal((await core.readNamespacedEndpoints({ name: "web", namespace })).metadata?.name, "web");
    await core.listNamespacedEndpoints({ namespace });

    const rc = await core.readNamespacedReplicationController({ name: "rc", namespace });
    assert.equal(typeof rc.status?.replicas, "number");
    await core.readNamespacedReplicationControllerStatus({ name: "rc", namespace });
    await core.listNamespacedReplicationController({ namespace });
    const scale = await core.readNamespacedReplicationControllerScale({ name: "rc", namespace });
    assert.equal(typeof scale.status?.replicas, "number");
    const scaled = await core.replaceNamespacedReplicationControllerScale({ name: "rc", namespace, body: { ...scale, spec: { replicas: 2 } } });
    assert.equal(scaled.spec?.replicas, 2);

    const ev = await core.readNamespacedEvent({ name: "ev", namespace });
    assert.equal(ev.involvedObject.name, "web");
    await core.listNamespacedEvent({ namespace });
    assert.equal((await core.readNamespacedConfigMap({ name: "cfg", namespace })).data?.["a"], "b");
    await core.listNamespacedConfigMap({ namespace });
    const secret = await core.readNamespacedSecret({ name: "sec", namespace });
    assert.equal(Buffer.from(secret.data?.["password"] ?? "", "base64").toString(), "hunter2");
    assert.equal(secret.stringData, undefined, "stringData is never returned");
    await core.listNamespacedSecret({ namespace });

    const ds = await apps.readNamespacedDaemonSet({ name: "ds", namespace });
    assert.equal(typeof ds.status?.numberReady, "number");
    await apps.readNamespacedDaemonSetStatus({ name: "ds", namespace });
    await apps.listNamespacedDaemonSet({ namespace });
    const rs = await apps.readNamespacedReplicaSet({ name: "rs", namespace });
    assert.equal(typeof rs.status?.replicas, "number");
    await apps.readNamespacedReplicaSetStatus({ name: "rs", namespace });
    await apps.listNamespacedReplicaSet({ namespace });
    assert.equal((await apps.readNamespacedReplicaSetScale({ name: "rs", namespace })).status?.selector, "app=rs");
    const deploy = await apps.readNamespacedDeployment({ name: "deploy", namespace });
    assert.equal(deploy.spec?.strategy?.type, "RollingUpdate");
    await apps.readNamespacedDeploymentStatus({ name: "deploy", namespace });
    await apps.listNamespacedDeployment({ namespace });
    assert.equal((await apps.readNamespacedDeploymentScale({ name: "deploy", namespace })).spec?.replicas, 1);
    const job = await batch.readNamespacedJob({ name: "job", namespace });
    assert.ok(job.status);
    await batch.readNamespacedJobStatus({ name: "job", namespace });
    await batch.listNamespacedJob({ namespace });
    const cj = await batch.readNamespacedCronJob({ name: "cj", namespace });
    assert.equal(cj.spec?.concurrencyPolicy, "Allow");
    await batch.readNamespacedCronJobStatus({ name: "cj", namespace });
    await batch.listNamespacedCronJob({ namespace });
    const policy = kc.makeApiClient(k8s.PolicyV1Api);
    const pdb = await policy.readNamespacedPodDisruptionBudget({ name: "pdb", namespace });
    assert.equal(pdb.spec?.minAvailable, 1);
    await policy.readNamespacedPodDisruptionBudgetStatus({ name: "pdb", namespace });
    await policy.listNamespacedPodDisruptionBudget({ namespace });
    const autoscaling = kc.makeApiClient(k8s.AutoscalingV2Api);
    const hpa = await autoscaling.readNamespacedHorizontalPodAutoscaler({ name: "hpa", namespace });
    assert.equal(hpa.spec?.metrics?.[0]?.resource?.target.averageUtilization, 80, "the default 80 % CPU target");
    await autoscaling.readNamespacedHorizontalPodAutoscalerStatus({ name: "hpa", namespace });
    await autoscaling.listNamespacedHorizontalPodAutoscaler({ namespace });
    assert.equal((await coord.readNamespacedLease({ name: "lease", namespace })).spec?.holderIdentity, "me");
    await coord.listNamespacedLease({ namespace });

    // One watch event, through the client's Watch (its done callback sees our abort).
    const events: { phase: string; obj: k8s.V1Pod }[] = [];
    const ctl = await new k8s.Watch(kc).watch(
      `/api/v1/namespaces/${NS}/pods`,
      {},
      (phase, obj: k8s.V1Pod) => events.push({ phase, obj }),
      () => undefined,
    );
    const first = await waitFor(async () => events[0], { ...WAIT, message: "a watch event through client-node" });
    ctl.abort();
    assert.equal(first.phase, "ADDED");
    assert.equal(first.obj.kind, "Pod");
  });
});
