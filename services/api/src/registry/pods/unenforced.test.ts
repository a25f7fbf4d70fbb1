import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { fromKubeJson, toKubeJson } from "@choreo/kit/kube-json";
import { startMemoryRegistry } from "../../testing/memory-registry.js";
import { testPod } from "../../testing/objects.js";
import { rejects } from "../../testing/api-assert.js";

const c = { name: "c", image: "nginx:1.25" };

describe("pod fields choreo stores but does not enforce", () => {
  it("refuses with 422 Invalid, naming each field, the ones whose silent ignoring is unsafe; nothing is written", async () => {
    const { client } = await startMemoryRegistry();
    const cases: [Record<string, unknown>, string][] = [
      [{ securityContext: { sysctls: [{ name: "net.ipv4.ip_local_port_range", value: "1024 65535" }] } }, "spec.securityContext.sysctls"],
      [{ containers: [{ ...c, securityContext: { seLinuxOptions: { level: "s0:c1" } } }] }, "spec.containers[0].securityContext.seLinuxOptions"],
      [{ containers: [{ ...c, securityContext: { appArmorProfile: { type: "RuntimeDefault" } } }] }, "spec.containers[0].securityContext.appArmorProfile"],
      [
        { affinity: { podAntiAffinity: { requiredDuringSchedulingIgnoredDuringExecution: [{ topologyKey: "kubernetes.io/hostname" }] } } },
        "spec.affinity.podAntiAffinity.requiredDuringSchedulingIgnoredDuringExecution",
      ],
      [
        { topologySpreadConstraints: [{ maxSkew: 1, topologyKey: "zone", whenUnsatisfiable: "DoNotSchedule" }] },
        "spec.topologySpreadConstraints[0].whenUnsatisfiable",
      ],
      [{ schedulingGates: [{ name: "wait" }] }, "spec.schedulingGates"],
      [{ containers: [{ ...c, readinessProbe: { grpc: { port: 9000 } } }] }, "spec.containers[0].readinessProbe.grpc"],
    ];
    for (const [extra, field] of cases) {
      const pod = testPod("p", { spec: { containers: [c], ...extra } });
      const err = await rejects(client.create(pod), 422, "Invalid");
      const causes = err.status.details?.causes ?? [];
      assert.ok(
        causes.some((x) => x.field === field && x.reason === "FieldValueForbidden"),
        `${field}: ${JSON.stringify(causes)}`,
      );
    }
    // The same inside a workload's template.
    const rc = fromKubeJson({
      apiVersion: "v1",
      kind: "ReplicationController",
      metadata: { name: "r", namespace: "default" },
      spec: { selector: { a: "b" }, template: { metadata: { labels: { a: "b" } }, spec: { containers: [c], runtimeClassName: "gvisor" } } },
    });
    const err = await rejects(client.create(rc), 422, "Invalid");
    assert.equal(err.status.details?.causes[0]?.field, "spec.template.spec.runtimeClassName");
    assert.equal((await client.list("pods", { namespace: "default" })).items.length, 0);
    assert.equal((await client.list("replicationcontrollers", { namespace: "default" })).items.length, 0);
  });

  it("takes the securityContext fields the node agents act on (restricted's hardening)", async () => {
    const { client } = await startMemoryRegistry();
    const hardened = {
      securityContext: {
        runAsNonRoot: true,
        runAsUser: 1000,
        runAsGroup: 2000,
        fsGroup: 3000,
        supplementalGroups: [4000],
        seccompProfile: { type: "RuntimeDefault" },
      },
      containers: [
        {
          ...c,
          securityContext: { readOnlyRootFilesystem: true, allowPrivilegeEscalation: false, capabilities: { drop: ["ALL"], add: ["NET_BIND_SERVICE"] } },
        },
      ],
    };
    const got = toKubeJson(await client.create(testPod("hardened", { spec: hardened })))["spec"] as Record<string, unknown>;
    assert.deepEqual(got["securityContext"], hardened.securityContext);
    assert.deepEqual((got["containers"] as Record<string, unknown>[])[0]?.["securityContext"], hardened.containers[0]?.securityContext);
  });

  it("stores and returns the harmless ones", async () => {
    const { client } = await startMemoryRegistry();
    const spec = {
      containers: [{ ...c, securityContext: { capabilities: { add: ["NET_ADMIN"] } }, lifecycle: { preStop: { sleep: { seconds: 1 } } } }],
      securityContext: { seccompProfile: { type: "Unconfined" } },
      affinity: {
        nodeAffinity: {
          preferredDuringSchedulingIgnoredDuringExecution: [{ weight: 1, preference: { matchExpressions: [{ key: "a", operator: "Exists" }] } }],
        },
      },
      topologySpreadConstraints: [{ maxSkew: 1, topologyKey: "zone", whenUnsatisfiable: "ScheduleAnyway" }],
      hostAliases: [{ ip: "127.0.0.1", hostnames: ["db"] }],
      dnsConfig: { options: [{ name: "ndots", value: "2" }] },
      imagePullSecrets: [{ name: "regcred" }],
      priorityClassName: "",
      automountServiceAccountToken: false,
    };
    // NET_ADMIN and seccomp Unconfined break Pod Security's baseline: the namespace is privileged.
    await client.patch("namespaces", "", "default", "application/merge-patch+json", {
      metadata: { labels: { "pod-security.kubernetes.io/enforce": "privileged" } },
    });
    const created = toKubeJson(await client.create(testPod("q", { spec })));
    const got = created["spec"] as Record<string, unknown>;
    for (const k of [
      "securityContext",
      "affinity",
      "topologySpreadConstraints",
      "hostAliases",
      "dnsConfig",
      "imagePullSecrets",
      "automountServiceAccountToken",
    ])
      assert.deepEqual(got[k], (spec as Record<string, unknown>)[k], k);
    const container = (got["containers"] as Record<string, unknown>[])[0];
    assert.deepEqual(container?.["securityContext"], spec.containers[0]?.securityContext);
    assert.deepEqual(container?.["lifecycle"], spec.containers[0]?.lifecycle);
  });

  it("takes a projected serviceAccountToken source (the node agent writes it since issue 14)", async () => {
    const { client } = await startMemoryRegistry();
    const volumes = [
      {
        name: "tok",
        projected: { sources: [{ configMap: { name: "x" } }, { serviceAccountToken: { audience: "vault", expirationSeconds: 600, path: "token" } }] },
      },
    ];
    const got = toKubeJson(await client.create(testPod("tok", { spec: { containers: [c], volumes } })))["spec"] as Record<string, unknown>;
    const sources = ((got["volumes"] as Record<string, unknown>[])[0]?.["projected"] as Record<string, unknown>)["sources"] as Record<string, unknown>[];
    assert.deepEqual(sources[1], { serviceAccountToken: { audience: "vault", expirationSeconds: 600, path: "token" } });
  });
});
