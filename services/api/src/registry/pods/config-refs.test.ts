import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { toKubeJson } from "@choreo/kit/kube-json";
import { startMemoryRegistry } from "../../testing/memory-registry.js";
import { testPod } from "../../testing/objects.js";
import { rejects } from "../../testing/api-assert.js";

const c = { name: "c", image: "nginx:1.25" };

describe("pod references to ConfigMaps, Secrets and the downward API", () => {
  it("are accepted and returned: env valueFrom, envFrom with a prefix, configMap/secret/downwardAPI/projected volumes", async () => {
    const { client } = await startMemoryRegistry();
    const spec = {
      containers: [
        {
          ...c,
          env: [
            { name: "A", valueFrom: { configMapKeyRef: { name: "cm", key: "a", optional: true } } },
            { name: "B", valueFrom: { secretKeyRef: { name: "s", key: "b" } } },
            { name: "MEM", valueFrom: { resourceFieldRef: { resource: "limits.memory", divisor: "1Mi" } } },
          ],
          envFrom: [{ prefix: "APP_", configMapRef: { name: "cm" } }, { secretRef: { name: "s", optional: true } }],
        },
      ],
      volumes: [
        { name: "cfg", configMap: { name: "cm", items: [{ key: "a", path: "conf/a", mode: 0o600 }], defaultMode: 0o644 } },
        { name: "sec", secret: { secretName: "s" } },
        { name: "meta", downwardAPI: { items: [{ path: "labels", fieldRef: { fieldPath: "metadata.labels" } }] } },
        { name: "all", projected: { sources: [{ configMap: { name: "cm" } }, { secret: { name: "s", items: [{ key: "b", path: "b" }] } }] } },
      ],
    };
    const created = toKubeJson(await client.create(testPod("ok", { spec })));
    const got = created["spec"] as { volumes: unknown[]; containers: { envFrom: unknown[] }[] };
    assert.equal(got.volumes.length, 4);
    assert.deepEqual(got.containers[0]!.envFrom, spec.containers[0]!.envFrom);
  });

  it("refuses what the kubelet would not make sense of, with 422 naming the field; nothing is written", async () => {
    const { client } = await startMemoryRegistry();
    const cases: [Record<string, unknown>, string][] = [
      [{ volumes: [{ name: "v", configMap: { name: "cm", items: [{ key: "a", path: "../escape" }] } }] }, "spec.volumes[0].configMap.items[0].path"],
      [{ volumes: [{ name: "v", configMap: { name: "cm", items: [{ key: "a", path: "/abs" }] } }] }, "spec.volumes[0].configMap.items[0].path"],
      [{ volumes: [{ name: "v", secret: { secretName: "s", defaultMode: 0o1777 } }] }, "spec.volumes[0].secret.defaultMode"],
      [{ volumes: [{ name: "v", secret: {} }] }, "spec.volumes[0].secret.secretName"],
      [
        { volumes: [{ name: "v", downwardAPI: { items: [{ path: "ip", fieldRef: { fieldPath: "status.podIP" } }] } }] },
        "spec.volumes[0].downwardAPI.items[0].fieldRef.fieldPath",
      ],
      [{ containers: [{ ...c, envFrom: [{ prefix: "1BAD", configMapRef: { name: "cm" } }] }] }, "spec.containers[0].envFrom[0].prefix"],
      [
        { containers: [{ ...c, env: [{ name: "A", valueFrom: { configMapKeyRef: { name: "cm", key: "bad key" } } }] }] },
        "spec.containers[0].env[0].valueFrom.configMapKeyRef.key",
      ],
      [
        { containers: [{ ...c, env: [{ name: "A", valueFrom: { resourceFieldRef: { resource: "limits.gpu" } } }] }] },
        "spec.containers[0].env[0].valueFrom.resourceFieldRef.resource",
      ],
    ];
    for (const [extra, field] of cases) {
      const err = await rejects(client.create(testPod("p", { spec: { containers: [c], ...extra } })), 422, "Invalid");
      const causes = err.status.details?.causes ?? [];
      assert.ok(
        causes.some((x) => x.field === field),
        `${field}: ${JSON.stringify(causes)}`,
      );
    }
    assert.equal((await client.list("pods", { namespace: "default" })).items.length, 0);
  });
});
