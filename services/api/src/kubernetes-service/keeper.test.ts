import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { fromKubeJson, toKubeJson } from "@choreo/kit/kube-json";
import { silentLogger } from "@choreo/kit/log";
import { waitFor } from "@choreo/kit/testing";
import { MemoryHandlers } from "../http/testing/memory-handlers.js";
import { startMemoryRegistry } from "../testing/memory-registry.js";
import { firstServiceIp, KubernetesServiceKeeper } from "./keeper.js";
import { sortEndpoints, type ApiEndpoint, type Membership } from "./membership.js";

// The keeper's sync against the real registry strategies (memory store):
// the Service with the CIDR's first address, its Endpoints to the advertise
// address, nothing written when both are right, restored when changed; a
// change whose sync failed (the store away) restored once the store is back.

type J = Record<string, unknown>;

describe("kubernetes Service keeper", () => {
  it("takes the first address of the service CIDR", () => {
    assert.equal(firstServiceIp("10.96.0.0/16"), "10.96.0.1");
    assert.equal(firstServiceIp("10.96.5.7/12"), "10.96.0.1");
    assert.equal(firstServiceIp("172.16.8.0/24"), "172.16.8.1");
    assert.throws(() => firstServiceIp("nope"));
  });

  it("makes default/kubernetes and its Endpoints, writes nothing when right, restores them when changed", async () => {
    const s = await startMemoryRegistry();
    const keeper = new KubernetesServiceKeeper({
      handlers: s.registry,
      serviceCidr: "10.96.0.0/16",
      httpsPort: 6443,
      advertiseAddress: "192.0.2.10",
      log: silentLogger(),
    });
    await keeper.sync();
    const svc = toKubeJson(await s.client.get("services", "default", "kubernetes"));
    const spec = svc["spec"] as J;
    assert.equal(spec["clusterIP"], "10.96.0.1");
    assert.deepEqual(spec["ports"], [{ name: "https", protocol: "TCP", port: 443, targetPort: 6443 }]);
    assert.equal(spec["selector"], undefined);
    assert.deepEqual((svc["metadata"] as J)["labels"], { component: "apiserver", provider: "kubernetes" });
    const ep = toKubeJson(await s.client.get("endpoints", "default", "kubernetes"));
    assert.deepEqual(ep["subsets"], [{ addresses: [{ ip: "192.0.2.10" }], ports: [{ name: "https", port: 6443, protocol: "TCP" }] }]);

    const rv = (o: J) => (o["metadata"] as J)["resourceVersion"];
    await keeper.sync();
    assert.equal(rv(toKubeJson(await s.client.get("services", "default", "kubernetes"))), rv(svc));
    assert.equal(rv(toKubeJson(await s.client.get("endpoints", "default", "kubernetes"))), rv(ep));

    // Someone points the Endpoints elsewhere and deletes the Service: both come back.
    await s.client.update(fromKubeJson({ ...ep, subsets: [{ addresses: [{ ip: "192.0.2.99" }], ports: [{ name: "https", port: 1, protocol: "TCP" }] }] }));
    await s.client.delete("services", "default", "kubernetes");
    await keeper.sync();
    assert.equal((toKubeJson(await s.client.get("services", "default", "kubernetes"))["spec"] as J)["clusterIP"], "10.96.0.1");
    assert.deepEqual(toKubeJson(await s.client.get("endpoints", "default", "kubernetes"))["subsets"], ep["subsets"]);
  });

  it("two replicas: the Endpoints list both (a subset per port), neither rewrites the other's; one gone is dropped", async () => {
    const s = await startMemoryRegistry();
    // The replicas' shared membership (membership.ts keeps it in Redis: membership.test.ts).
    const live = new Map<string, ApiEndpoint>();
    const member = (self: ApiEndpoint): Membership => ({
      renewMs: 10_000,
      renew: () => Promise.resolve(void live.set(`${self.ip}:${self.port}`, self)),
      members: () => Promise.resolve(sortEndpoints([self, ...live.values()])),
      leave: () => Promise.resolve(void live.delete(`${self.ip}:${self.port}`)),
    });
    const keeper = (ip: string, port: number) => {
      const membership = member({ ip, port });
      const k = new KubernetesServiceKeeper({
        handlers: s.registry,
        serviceCidr: "10.96.0.0/16",
        httpsPort: port,
        advertiseAddress: ip,
        log: silentLogger(),
        membership,
      });
      return { k, membership };
    };
    const a = keeper("192.0.2.10", 6443);
    const b = keeper("192.0.2.10", 6444);
    const c = keeper("192.0.2.11", 6443);
    for (const r of [a, b, c]) await r.membership.renew();
    await a.k.sync();
    const rvs = async () =>
      [await s.client.get("services", "default", "kubernetes"), await s.client.get("endpoints", "default", "kubernetes")].map(
        (o) => (toKubeJson(o)["metadata"] as J)["resourceVersion"],
      );
    const settled = await rvs();
    for (const r of [b, c, a, b, c]) await r.k.sync();
    assert.deepEqual(await rvs(), settled, "the replicas agree: nothing rewritten");
    assert.deepEqual(toKubeJson(await s.client.get("endpoints", "default", "kubernetes"))["subsets"], [
      { addresses: [{ ip: "192.0.2.10" }, { ip: "192.0.2.11" }], ports: [{ name: "https", port: 6443, protocol: "TCP" }] },
      { addresses: [{ ip: "192.0.2.10" }], ports: [{ name: "https", port: 6444, protocol: "TCP" }] },
    ]);
    await b.membership.leave();
    await a.k.sync();
    assert.deepEqual(toKubeJson(await s.client.get("endpoints", "default", "kubernetes"))["subsets"], [
      { addresses: [{ ip: "192.0.2.10" }, { ip: "192.0.2.11" }], ports: [{ name: "https", port: 6443, protocol: "TCP" }] },
    ]);
  });

  it("without an advertise address: the Service, and Endpoints without addresses", async () => {
    const s = await startMemoryRegistry();
    await new KubernetesServiceKeeper({
      handlers: s.registry,
      serviceCidr: "10.96.0.0/16",
      httpsPort: 6443,
      advertiseAddress: undefined,
      log: silentLogger(),
    }).sync();
    assert.equal((toKubeJson(await s.client.get("services", "default", "kubernetes"))["spec"] as J)["clusterIP"], "10.96.0.1");
    assert.equal(toKubeJson(await s.client.get("endpoints", "default", "kubernetes"))["subsets"], undefined);
  });

  it("tries again a sync that failed (the store away) until the Endpoints are right", async () => {
    const h = new MemoryHandlers();
    h.seed({ apiVersion: "v1", kind: "Namespace", metadata: { name: "default" } });
    let storeAway = false;
    let failedReads = 0;
    const away = <T>(fn: () => Promise<T>): Promise<T> => {
      if (!storeAway) return fn();
      failedReads++;
      return Promise.reject(new Error("Reached the max retries per request limit (which is 3)"));
    };
    const ac = new AbortController();
    const running = new KubernetesServiceKeeper({
      handlers: {
        get: (r) => away(() => h.get(r)),
        create: (r) => away(() => h.create(r)),
        update: (r) => away(() => h.update(r)),
        watch: (r, signal) => h.watch(r, signal),
      },
      serviceCidr: "10.96.0.0/16",
      httpsPort: 6443,
      advertiseAddress: "192.0.2.10",
      log: silentLogger(),
      resyncMs: 600_000,
      retryMs: 50,
    }).start(ac.signal);
    try {
      const subsets = async (): Promise<string> =>
        JSON.stringify(toKubeJson(await h.get({ resource: "endpoints", namespace: "default", name: "kubernetes" }))["subsets"]);
      const right = JSON.stringify([{ addresses: [{ ip: "192.0.2.10" }], ports: [{ name: "https", port: 6443, protocol: "TCP" }] }]);
      await waitFor(async () => (await subsets().catch(() => "")) === right, { timeoutMs: 30_000, message: "the Endpoints made" });
      storeAway = true;
      const ep = toKubeJson(await h.get({ resource: "endpoints", namespace: "default", name: "kubernetes" }));
      await h.update({
        object: fromKubeJson({ ...ep, subsets: [{ addresses: [{ ip: "192.0.2.99" }], ports: [{ name: "https", port: 1, protocol: "TCP" }] }] }),
        dryRun: false,
      });
      await waitFor(() => failedReads >= 2, { timeoutMs: 30_000, message: "the keeper tried, and tried again" });
      storeAway = false;
      await waitFor(async () => (await subsets()) === right, { timeoutMs: 30_000, message: "the Endpoints restored once the store is back" });
    } finally {
      ac.abort();
      await running;
    }
  });
});
