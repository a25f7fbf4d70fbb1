// What a pod uses, and the graph of nodes, pods and what their pods use.
import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { unwrap } from "@choreo/kit";
import { fromKubeJson } from "@choreo/kit/kube-json";
import type { Pod } from "@choreo/kit/gen/choreo/core/v1/core";
import { NodeGraph } from "./graph.js";
import { podReferences } from "./pod-references.js";

function pod(name: string, spec: Record<string, unknown>, namespace = "default"): Pod {
  return unwrap(fromKubeJson({ apiVersion: "v1", kind: "Pod", metadata: { name, namespace }, spec })) as Pod;
}

const sorted = (s: Set<string>): string[] => [...s].sort();

describe("podReferences", () => {
  it("finds every Secret, ConfigMap, PVC and the ServiceAccount, from volumes, projections, env, envFrom of every container kind and pull secrets", () => {
    const p = pod("all", {
      serviceAccountName: "robot",
      imagePullSecrets: [{ name: "pull" }],
      volumes: [
        { name: "s", secret: { secretName: "vol-secret" } },
        { name: "c", configMap: { name: "vol-cm" } },
        { name: "d", persistentVolumeClaim: { claimName: "data" } },
        { name: "p", projected: { sources: [{ secret: { name: "proj-secret" } }, { configMap: { name: "proj-cm" } }, { downwardAPI: { items: [] } }] } },
        { name: "e", emptyDir: {} },
      ],
      initContainers: [{ name: "i", image: "x", env: [{ name: "A", valueFrom: { secretKeyRef: { name: "init-secret", key: "k" } } }] }],
      containers: [
        {
          name: "c",
          image: "x",
          envFrom: [{ secretRef: { name: "from-secret" } }, { configMapRef: { name: "from-cm", optional: true } }],
          env: [
            { name: "B", valueFrom: { configMapKeyRef: { name: "env-cm", key: "k" } } },
            { name: "C", value: "plain" },
            { name: "D", valueFrom: { fieldRef: { fieldPath: "metadata.name" } } },
          ],
        },
      ],
      ephemeralContainers: [{ name: "dbg", image: "x", env: [{ name: "E", valueFrom: { secretKeyRef: { name: "debug-secret", key: "k" } } }] }],
    });
    const r = podReferences(p);
    assert.deepEqual(sorted(r.secrets), ["debug-secret", "from-secret", "init-secret", "proj-secret", "pull", "vol-secret"]);
    assert.deepEqual(sorted(r.configmaps), ["env-cm", "from-cm", "proj-cm", "vol-cm"]);
    assert.deepEqual(sorted(r.persistentvolumeclaims), ["data"]);
    assert.deepEqual(sorted(r.serviceaccounts), ["robot"]);
  });

  it("a pod using nothing still runs as an account: default, or the deprecated serviceAccount field", () => {
    const r = podReferences(pod("bare", { containers: [{ name: "c", image: "x" }] }));
    assert.deepEqual([r.secrets.size, r.configmaps.size, r.persistentvolumeclaims.size], [0, 0, 0]);
    assert.deepEqual(sorted(r.serviceaccounts), ["default"]);
    assert.deepEqual(sorted(podReferences(pod("old", { serviceAccount: "legacy", containers: [{ name: "c", image: "x" }] })).serviceaccounts), ["legacy"]);
  });
});

describe("NodeGraph", () => {
  const web = (name: string, node: string, secret: string, namespace = "default") =>
    pod(
      name,
      { nodeName: node, containers: [{ name: "c", image: "x", env: [{ name: "S", valueFrom: { secretKeyRef: { name: secret, key: "k" } } }] }] },
      namespace,
    );

  it("knows each pod's node and what each node's pods use, in their namespace", () => {
    const g = new NodeGraph();
    g.put(web("a", "node-1", "db"));
    g.put(web("b", "node-2", "other"));
    g.put(pod("pending", { containers: [{ name: "c", image: "x", envFrom: [{ secretRef: { name: "later" } }] }] }));
    assert.equal(g.podNode("default", "a"), "node-1");
    assert.equal(g.podNode("default", "pending"), "", "known, unbound");
    assert.equal(g.podNode("default", "nope"), undefined);
    assert.ok(g.uses("node-1", "secrets", "default", "db"));
    assert.ok(g.uses("node-1", "serviceaccounts", "default", "default"));
    assert.ok(!g.uses("node-1", "secrets", "default", "other"));
    assert.ok(!g.uses("node-1", "secrets", "prod", "db"), "another namespace's Secret of the same name");
    assert.ok(!g.uses("node-1", "configmaps", "default", "db"), "another kind of the same name");
    assert.ok(!g.uses("node-1", "secrets", "default", "later") && !g.uses("", "secrets", "default", "later"), "an unbound pod gives no node anything");
  });

  it("counts users: a Secret two pods of a node use stays readable until both are gone; binding, moving and relisting change the edges", () => {
    const g = new NodeGraph();
    g.put(web("a", "node-1", "db"));
    g.put(web("b", "node-1", "db"));
    g.remove(web("a", "node-1", "db"));
    assert.ok(g.uses("node-1", "secrets", "default", "db"));
    g.put(web("b", "node-1", "db2"));
    assert.ok(!g.uses("node-1", "secrets", "default", "db"), "the update replaced what b uses");
    assert.ok(g.uses("node-1", "secrets", "default", "db2"));
    g.remove(web("b", "node-1", "db2"));
    assert.ok(!g.uses("node-1", "secrets", "default", "db2"));
    assert.equal(g.size, 0);
    g.put(web("c", "node-1", "x"));
    g.replace([web("d", "node-2", "y")]);
    assert.equal(g.podNode("default", "c"), undefined);
    assert.ok(!g.uses("node-1", "secrets", "default", "x"));
    assert.ok(g.uses("node-2", "secrets", "default", "y"));
  });
});
