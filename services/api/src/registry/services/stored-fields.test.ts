import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { fromKubeJson, toKubeJson } from "@choreo/kit/kube-json";
import { startMemoryRegistry } from "../../testing/memory-registry.js";
import { rejects } from "../../testing/api-assert.js";

const svc = (name: string, spec: Record<string, unknown>) =>
  fromKubeJson({
    apiVersion: "v1",
    kind: "Service",
    metadata: { name, namespace: "default" },
    spec: { selector: { app: "web" }, ports: [{ port: 80 }], ...spec },
  });

describe("Service fields stored but not acted on", () => {
  it("stores and returns sessionAffinityConfig, externalIPs, appProtocol; status.loadBalancer reads as {}", async () => {
    const { client } = await startMemoryRegistry();
    const spec = { sessionAffinity: "ClientIP", sessionAffinityConfig: { clientIP: { timeoutSeconds: 600 } }, externalIPs: ["192.0.2.1"] };
    const got = toKubeJson(await client.create(svc("a", spec)));
    const s = got["spec"] as Record<string, unknown>;
    assert.deepEqual(s["sessionAffinityConfig"], spec.sessionAffinityConfig);
    assert.deepEqual(s["externalIPs"], spec.externalIPs);
    assert.deepEqual(got["status"], { loadBalancer: {} });
  });

  it("refuses them with 422 where Kubernetes does, and writes nothing", async () => {
    const { client } = await startMemoryRegistry();
    const cases: [Record<string, unknown>, string][] = [
      [{ sessionAffinityConfig: { clientIP: { timeoutSeconds: 10 } } }, "spec.sessionAffinityConfig"],
      [{ sessionAffinity: "ClientIP", sessionAffinityConfig: { clientIP: { timeoutSeconds: 86401 } } }, "spec.sessionAffinityConfig.clientIP.timeoutSeconds"],
      [{ externalTrafficPolicy: "Local" }, "spec.externalTrafficPolicy"],
      [{ loadBalancerSourceRanges: ["10.0.0.0/8"] }, "spec.loadBalancerSourceRanges"],
      [{ trafficDistribution: "Anywhere" }, "spec.trafficDistribution"],
    ];
    for (const [spec, field] of cases) {
      const err = await rejects(client.create(svc("b", spec)), 422, "Invalid");
      assert.ok(
        err.status.details?.causes.some((c) => c.field === field),
        `${field}: ${JSON.stringify(err.status.details?.causes)}`,
      );
    }
    assert.equal((await client.list("services", { namespace: "default" })).items.filter((s) => s.kind?.value.metadata?.name === "b").length, 0);
  });

  it("port names are DNS-1123 labels as in Kubernetes: 5432-5432 (kubectl create service's name) is valid, UPPER is not", async () => {
    const { client } = await startMemoryRegistry();
    await client.create(svc("digits", { ports: [{ name: "5432-5432", port: 5432 }] }));
    const err = await rejects(client.create(svc("upper", { ports: [{ name: "UPPER", port: 80 }] })), 422, "Invalid");
    assert.ok(err.status.details?.causes.some((c) => c.field === "spec.ports[0].name"));
  });
});
