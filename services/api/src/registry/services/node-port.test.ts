import assert from "node:assert/strict";
import { before, describe, it } from "node:test";
import { ApiError, kindByResource, unwrap } from "@choreo/kit";
import { fromKubeJson, toKubeJson } from "@choreo/kit/kube-json";
import type { Service } from "@choreo/kit/gen/choreo/core/v1/core";
import { toTable } from "../../http/tables/table.js";
import { startMemoryRegistry, type MemoryRegistry } from "../../testing/memory-registry.js";

const svc = (name: string, spec: Record<string, unknown>) =>
  fromKubeJson({
    apiVersion: "v1",
    kind: "Service",
    metadata: { name, namespace: "default" },
    spec: { selector: { app: "web" }, ports: [{ port: 80 }], ...spec },
  });

async function refused(p: Promise<unknown>, message: string): Promise<void> {
  try {
    await p;
  } catch (err) {
    assert.ok(err instanceof ApiError, String(err));
    assert.equal(err.code, 422, err.message);
    assert.ok(err.message.includes(message), err.message);
    return;
  }
  assert.fail("expected a refusal");
}

describe("NodePort services", () => {
  // On the in-memory storage: allocation is the storage's, no server needed.
  let s: MemoryRegistry;
  before(async () => {
    s = await startMemoryRegistry();
  });

  it("allocates node ports from 30000-32767, honours a requested one, refuses taken and out-of-range ports", async () => {
    const a = unwrap(
      await s.client.create(
        svc("np-a", {
          type: "NodePort",
          ports: [
            { name: "http", port: 80 },
            { name: "https", port: 443 },
          ],
        }),
      ),
    ) as Service;
    const ports = a.spec?.ports.map((p) => p.nodePort) ?? [];
    assert.equal(ports.length, 2);
    for (const n of ports) assert.ok(n >= 30000 && n <= 32767, String(n));
    assert.notEqual(ports[0], ports[1]);

    const fixed = unwrap(await s.client.create(svc("np-fixed", { type: "NodePort", ports: [{ port: 80, nodePort: 30080 }] }))) as Service;
    assert.equal(fixed.spec?.ports[0]?.nodePort, 30080);
    await refused(
      s.client.create(svc("np-taken", { type: "NodePort", ports: [{ port: 80, nodePort: 30080 }] })),
      "spec.ports[0].nodePort: Invalid value: 30080: provided port is already allocated",
    );
    await refused(
      s.client.create(svc("np-out", { type: "NodePort", ports: [{ port: 80, nodePort: 40000 }] })),
      "spec.ports[0].nodePort: Invalid value: 40000: provided port is not in the valid range. The range of valid ports is 30000-32767",
    );
    await refused(
      s.client.create(svc("np-cip", { ports: [{ port: 80, nodePort: 30081 }] })),
      "spec.ports[0].nodePort: Forbidden: may not be used when `type` is 'ClusterIP'",
    );
    await refused(s.client.create(svc("np-lb", { type: "LoadBalancer" })), 'spec.type: Unsupported value: "LoadBalancer"');
    // A refused create took nothing: 30081 is still free.
    const other = unwrap(await s.client.create(svc("np-other", { type: "NodePort", ports: [{ port: 80, nodePort: 30081 }] }))) as Service;
    assert.equal(other.spec?.ports[0]?.nodePort, 30081);

    await s.client.delete("services", "default", "np-fixed");
    const again = unwrap(await s.client.create(svc("np-again", { type: "NodePort", ports: [{ port: 80, nodePort: 30080 }] }))) as Service;
    assert.equal(again.spec?.ports[0]?.nodePort, 30080, "released on delete");
  });

  it("keeps node ports across updates and shows them in the services table", async () => {
    const created = unwrap(await s.client.create(svc("np-upd", { type: "NodePort", ports: [{ port: 80, nodePort: 30090 }] }))) as Service;
    const next = structuredClone(created);
    next.spec!.ports[0]!.nodePort = 0; // an apply without the field
    next.metadata!.labels = { tier: "web" };
    const updated = unwrap(await s.client.update({ kind: { $case: "service", value: next } })) as Service;
    assert.equal(updated.spec?.ports[0]?.nodePort, 30090);
    const changed = structuredClone(updated);
    changed.spec!.ports[0]!.nodePort = 30091;
    await refused(s.client.update({ kind: { $case: "service", value: changed } }), "may not be added or changed on update");

    const json = toKubeJson({ kind: { $case: "service", value: updated } });
    const t = toTable(kindByResource("services")!, [json], { includeObject: "None", resourceVersion: "1", now: Date.now() });
    const cells = (t["rows"] as { cells: unknown[] }[])[0]!.cells;
    assert.equal(cells[1], "NodePort");
    assert.equal(cells[4], "80:30090/TCP");
  });
});
