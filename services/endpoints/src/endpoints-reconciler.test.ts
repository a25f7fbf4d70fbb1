import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { ApiError, keyOf, notFound, alreadyExists, unwrap, type ApiObject } from "@choreo/kit";
import type { Endpoints, Pod, Service } from "@choreo/kit/gen/choreo/core/v1/core";
import { silentLogger } from "@choreo/kit/log";
import { FakeInformer } from "@choreo/kit/testing";
import { EndpointsReconciler } from "./endpoints-reconciler.js";
import { desiredSubsets } from "./subsets.js";
import { pod, service } from "./testing.js";
import { podCacheTransform } from "./pod-cache.js";

const FakeCache = FakeInformer;

type Action = { verb: string; key: string; endpoints?: Endpoints };

/** Records what the reconciler asks of the api; `failWith` scripts errors per verb. */
function recorder(
  stored: Map<string, Endpoints> = new Map(),
  failWith: Record<string, ApiError> = {},
): {
  client: ConstructorParameters<typeof EndpointsReconciler>[0]["client"];
  actions: Action[];
} {
  const actions: Action[] = [];
  const epOf = (o: ApiObject): Endpoints => unwrap(o) as Endpoints;
  const client = {
    async create(o: ApiObject) {
      const ep = epOf(o);
      actions.push({ verb: "create", key: keyOf(ep.metadata!), endpoints: ep });
      if (failWith["create"]) throw failWith["create"];
      return o;
    },
    async update(o: ApiObject) {
      const ep = epOf(o);
      actions.push({ verb: "update", key: keyOf(ep.metadata!), endpoints: ep });
      return o;
    },
    async delete(_r: string, ns: string, name: string) {
      actions.push({ verb: "delete", key: `${ns}/${name}` });
      if (failWith["delete"]) throw failWith["delete"];
      return {};
    },
    async get(_r: string, ns: string, name: string): Promise<ApiObject> {
      actions.push({ verb: "get", key: `${ns}/${name}` });
      const ep = stored.get(`${ns}/${name}`);
      if (!ep) throw notFound("endpoints", name);
      return { kind: { $case: "endpoints", value: ep } };
    },
  };
  return { client, actions };
}

function setup(opts: { stored?: Map<string, Endpoints>; failWith?: Record<string, ApiError> } = {}) {
  const services = new FakeCache<Service>();
  const pods = new FakeCache<Pod>(podCacheTransform());
  const endpoints = new FakeCache<Endpoints>();
  const { client, actions } = recorder(opts.stored, opts.failWith);
  const r = new EndpointsReconciler({ client, services, pods, endpoints, log: silentLogger() });
  const queued: string[] = [];
  r.controller.enqueue = (k: string) => void queued.push(k);
  return { services, pods, endpoints, actions, r, queued };
}

const HTTP = [{ name: "http", port: 80, targetPort: 8080 }];

describe("EndpointsReconciler.reconcile", () => {
  it("creates the Endpoints of a selector service from its matching pods", async () => {
    const t = setup();
    t.services.put(service("web", HTTP));
    t.pods.put(pod("a", { ip: "10.0.0.1" }));
    t.pods.put(pod("b", { ip: "10.0.0.2", ready: false }));
    t.pods.put(pod("other", { ip: "10.0.0.9", labels: { app: "db" } }));
    await t.r.reconcile("default/web");
    assert.deepEqual(
      t.actions.map((a) => `${a.verb} ${a.key}`),
      ["create default/web"],
    );
    const ep = t.actions[0]?.endpoints;
    assert.deepEqual(
      ep?.subsets[0]?.addresses.map((a) => a.ip),
      ["10.0.0.1"],
    );
    assert.deepEqual(
      ep?.subsets[0]?.notReadyAddresses.map((a) => a.ip),
      ["10.0.0.2"],
    );
  });

  it("does nothing when the stored Endpoints already say the same", async () => {
    const t = setup();
    const svc = service("web", HTTP);
    t.services.put(svc);
    const p = pod("a", { ip: "10.0.0.1" });
    t.pods.put(p);
    t.endpoints.put({ apiVersion: "v1", kind: "Endpoints", metadata: { ...svc.metadata!, labels: {} }, subsets: desiredSubsets(svc, [p]).reverse() });
    await t.r.reconcile("default/web");
    assert.deepEqual(t.actions, []);
  });

  it("updates when a pod turned unready", async () => {
    const t = setup();
    const svc = service("web", HTTP);
    t.services.put(svc);
    t.endpoints.put({
      apiVersion: "v1",
      kind: "Endpoints",
      metadata: { ...svc.metadata!, resourceVersion: "7" },
      subsets: desiredSubsets(svc, [pod("a", { ip: "10.0.0.1" })]),
    });
    t.pods.put(pod("a", { ip: "10.0.0.1", ready: false }));
    await t.r.reconcile("default/web");
    assert.deepEqual(
      t.actions.map((a) => a.verb),
      ["update"],
    );
    assert.equal(t.actions[0]?.endpoints?.metadata?.resourceVersion, "7");
    assert.deepEqual(
      t.actions[0]?.endpoints?.subsets[0]?.notReadyAddresses.map((a) => a.ip),
      ["10.0.0.1"],
    );
    assert.deepEqual(t.actions[0]?.endpoints?.subsets[0]?.addresses, []);
  });

  it("falls back to get + update when the create finds Endpoints the cache has not seen", async () => {
    const stored = new Map([["default/web", { apiVersion: "v1", kind: "Endpoints", metadata: service("web", []).metadata, subsets: [] } as Endpoints]]);
    const t = setup({ stored, failWith: { create: alreadyExists("endpoints", "web") } });
    t.services.put(service("web", HTTP));
    t.pods.put(pod("a", { ip: "10.0.0.1" }));
    await t.r.reconcile("default/web");
    assert.deepEqual(
      t.actions.map((a) => a.verb),
      ["create", "get", "update"],
    );
  });

  it("deletes the Endpoints of a deleted service, tolerating NotFound", async () => {
    const t = setup({ failWith: { delete: notFound("endpoints", "gone") } });
    await t.r.reconcile("default/gone");
    assert.deepEqual(
      t.actions.map((a) => `${a.verb} ${a.key}`),
      ["delete default/gone"],
    );
  });

  it("leaves the Endpoints of a service without a selector alone", async () => {
    const t = setup();
    t.services.put(service("manual", HTTP, {}));
    t.pods.put(pod("a", { ip: "10.0.0.1" }));
    await t.r.reconcile("default/manual");
    assert.deepEqual(t.actions, []);
  });
});

describe("EndpointsReconciler handlers", () => {
  it("enqueue the services whose selector matches a pod's new or old labels, in its namespace only", () => {
    const t = setup();
    t.services.put(service("web", HTTP));
    t.services.put(service("db", HTTP, { app: "db" }));
    t.services.put(service("manual", HTTP, {}));
    t.queued.length = 0;
    t.pods.put(pod("a", { ip: "10.0.0.1" }));
    assert.deepEqual(t.queued, ["default/web"]);
    t.queued.length = 0;
    t.pods.put(pod("a", { ip: "10.0.0.1", labels: { app: "db" } }));
    assert.deepEqual([...t.queued].sort(), ["default/db", "default/web"]);
    t.queued.length = 0;
    t.pods.put(pod("x", { ip: "10.0.0.2", namespace: "other" }));
    assert.deepEqual(t.queued, []);
    t.pods.remove(pod("a", { labels: { app: "db" } }));
    assert.deepEqual(t.queued, ["default/db"]);
  });

  it("enqueue a service on its own changes and on changes to its Endpoints", () => {
    const t = setup();
    const svc = service("web", HTTP);
    t.services.put(svc);
    t.services.remove(svc);
    t.endpoints.put({ apiVersion: "v1", kind: "Endpoints", metadata: svc.metadata, subsets: [] });
    t.endpoints.put({ apiVersion: "v1", kind: "Endpoints", metadata: svc.metadata, subsets: [] });
    assert.deepEqual(t.queued, ["default/web", "default/web", "default/web"]);
  });
});
