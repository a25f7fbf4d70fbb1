import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { DESCRIBERS } from "./describers.js";
import { eventsSection } from "./format.js";

const now = Date.parse("2025-01-01T00:10:00Z");

describe("describers", () => {
  it("a pod: aligned fields, controller, containers with state, conditions, and aggregated events", () => {
    const pod = {
      apiVersion: "v1",
      kind: "Pod",
      metadata: {
        name: "web-1",
        namespace: "default",
        labels: { app: "web", stage: "production" },
        creationTimestamp: "2025-01-01T00:00:00Z",
        ownerReferences: [{ kind: "ReplicationController", name: "web", uid: "u", controller: true }],
      },
      spec: {
        nodeName: "hollow-0",
        containers: [{ name: "web", image: "nginx", ports: [{ name: "http", containerPort: 80, protocol: "TCP" }], resources: { requests: { cpu: "100m" } } }],
      },
      status: {
        phase: "Running",
        podIP: "10.244.0.5",
        hostIP: "172.16.0.1",
        qosClass: "Burstable",
        conditions: [{ type: "Ready", status: "True" }],
        containerStatuses: [{ name: "web", ready: true, restartCount: 2, state: { running: { startedAt: "2025-01-01T00:00:01Z" } } }],
      },
    };
    const w = DESCRIBERS["Pod"]!(pod, {}, now);
    eventsSection(
      w,
      [
        {
          type: "Normal",
          reason: "Scheduled",
          message: "Successfully assigned default/web-1 to hollow-0",
          count: 1,
          firstTimestamp: "2025-01-01T00:00:00Z",
          lastTimestamp: "2025-01-01T00:00:00Z",
          source: { component: "default-scheduler" },
        },
        {
          type: "Warning",
          reason: "BackOff",
          message: "Back-off restarting failed container web",
          count: 3,
          firstTimestamp: "2025-01-01T00:05:00Z",
          lastTimestamp: "2025-01-01T00:09:50Z",
          source: { component: "kubelet" },
        },
      ],
      now,
    );
    const out = w.toString();
    assert.match(out, /^Name:\s+web-1$/m);
    assert.match(out, /^Labels:\s+app=web\n\s+stage=production$/m);
    assert.match(out, /^Node:\s+hollow-0\/172\.16\.0\.1$/m);
    assert.match(out, /^Controlled By:\s+ReplicationController\/web$/m);
    assert.match(out, /^\s+State:\s+Running$/m);
    assert.match(out, /^\s+Restart Count:\s+2$/m);
    assert.match(out, /^\s+Port:\s+80\/TCP \(http\)$/m);
    assert.match(out, /^Events:\n\s+Type\s+Reason\s+Age\s+From\s+Message\n\s+----/m);
    assert.match(out, /Warning\s+BackOff\s+10s \(x3 over 5m\)\s+kubelet\s+Back-off restarting failed container web/);
    assert.ok(out.indexOf("Scheduled") < out.indexOf("BackOff"), "oldest first");
  });

  it("an RC: replicas, pod phases; a node: taints and its pods; a service: endpoints", () => {
    const rc = {
      metadata: { name: "web", namespace: "default" },
      spec: {
        replicas: 3,
        selector: { app: "web" },
        template: { metadata: { labels: { app: "web" } }, spec: { containers: [{ name: "web", image: "nginx" }] } },
      },
      status: { replicas: 2 },
    };
    const pods = [{ status: { phase: "Running" } }, { status: { phase: "Pending" } }];
    const out = DESCRIBERS["ReplicationController"]!(rc, { pods }, now).toString();
    assert.match(out, /^Replicas:\s+2 current \/ 3 desired$/m);
    assert.match(out, /^Pods Status:\s+1 Running \/ 1 Waiting \/ 0 Succeeded \/ 0 Failed$/m);

    const node = {
      metadata: { name: "n1" },
      spec: { taints: [{ key: "node.kubernetes.io/unreachable", effect: "NoExecute" }] },
      status: { conditions: [{ type: "Ready", status: "Unknown", reason: "NodeStatusUnknown" }], allocatable: { cpu: "4", pods: "110" } },
    };
    const nout = DESCRIBERS["Node"]!(
      node,
      {
        pods: [
          { metadata: { name: "p", namespace: "default" }, spec: { containers: [{ resources: { requests: { cpu: "100m" } } }] }, status: { phase: "Running" } },
        ],
      },
      now,
    ).toString();
    assert.match(nout, /^Taints:\s+node\.kubernetes\.io\/unreachable:NoExecute$/m);
    assert.match(nout, /Ready\s+Unknown/);
    assert.match(nout, /^Non-terminated Pods:\s+\(1 in total\)$/m);

    const svc = {
      metadata: { name: "web", namespace: "default" },
      spec: { type: "ClusterIP", clusterIP: "10.96.0.10", selector: { app: "web" }, ports: [{ name: "http", port: 80, targetPort: "http", protocol: "TCP" }] },
    };
    const ep = { subsets: [{ addresses: [{ ip: "10.244.0.5" }, { ip: "10.244.1.7" }], ports: [{ port: 80 }] }] };
    assert.match(DESCRIBERS["Service"]!(svc, { endpoints: ep }, now).toString(), /^Endpoints:\s+10\.244\.0\.5:80,10\.244\.1\.7:80$/m);
  });
});
