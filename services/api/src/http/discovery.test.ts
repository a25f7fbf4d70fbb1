import assert from "node:assert/strict";
import { after, before, describe, it } from "node:test";
import { KINDS } from "@choreo/kit";
import { Registry } from "prom-client";
import { parseRoute } from "./routes.js";
import { startTestGateway, type TestGateway } from "./testing/harness.js";

describe("routes", () => {
  it("parses the path shapes", () => {
    const r = (p: string) => {
      const x = parseRoute(p);
      return x.type === "resource" ? `${x.info.resource}|${x.namespace}|${x.name}|${x.subresource}` : x.type;
    };
    assert.equal(r("/api/v1/pods"), "pods|||");
    assert.equal(r("/api/v1/namespaces/default/pods"), "pods|default||");
    assert.equal(r("/api/v1/namespaces/default/pods/web/status"), "pods|default|web|status");
    assert.equal(r("/api/v1/namespaces/default/pods/web/log"), "pods|default|web|log");
    assert.equal(r("/api/v1/namespaces/default"), "namespaces||default|");
    assert.equal(r("/api/v1/namespaces/default/status"), "namespaces||default|status");
    assert.equal(r("/api/v1/namespaces"), "namespaces|||");
    assert.equal(r("/api/v1/nodes/n1"), "nodes||n1|");
    assert.equal(r("/api/v1/nodes/n1/status"), "nodes||n1|status");
    assert.equal(r("/apis/apps/v1/namespaces/x/daemonsets/d"), "daemonsets|x|d|");
    assert.equal(r("/api/v1/namespaces/x/replicationcontrollers/r/scale"), "replicationcontrollers|x|r|scale");
    assert.equal(r("/api/v1/namespaces/x/pods/a%20b"), "pods|x|a b|");
    assert.equal(r("/api"), "apiVersions");
    assert.equal(r("/apis"), "apiGroupList");
    assert.equal(r("/apis/apps"), "apiGroup");
    assert.equal(r("/apis/apps/v1"), "resourceList");
    for (const bad of [
      "/api/v2/pods",
      "/api/v1/foos",
      "/apis/apps/v1/pods",
      "/api/v1/daemonsets",
      "/apis/apps/v2/daemonsets",
      "/api/v1/pods/web",
      "/api/v1/namespaces/x/nodes",
      "/api/v1/namespaces/x/pods/w/scale",
      "/api/v1/namespaces/x/services/s/log",
      "/api/v1/namespaces/x/events/e/status",
      "/nope",
      "/apis/nope/v1",
    ]) {
      assert.throws(
        () => parseRoute(bad),
        (e: { code?: number }) => e.code === 404,
        bad,
      );
    }
  });

  it("trims trailing slashes in linear time (the regex it replaced took 140 ms for 16 KiB of slashes, 4.4 s for 64 KiB)", () => {
    assert.equal(parseRoute("/api/v1/pods///").type, "resource");
    assert.equal(parseRoute("/apis/apps/v1/").type, "resourceList");
    for (const p of [`/${"/".repeat(1 << 20)}x`, `/api/v1/pods${"/".repeat(1 << 20)}`]) {
      const t = performance.now();
      try {
        parseRoute(p);
      } catch {
        // a 404 is fine: the time is what is measured
      }
      const ms = performance.now() - t;
      // Linear: ~5 ms alone, 1.2 s seen on a 2-core machine at load 13; the old
      // quadratic regex: ~10 min for 1 MiB. The bound sits far from both.
      assert.ok(ms < 20_000, `${ms} ms`);
    }
  });
});

describe("discovery", () => {
  let t: TestGateway;
  const registry = new Registry();
  before(async () => {
    t = await startTestGateway({ serverAddress: "10.0.0.1:6443", registry });
  });
  after(() => t.close());

  it("serves /api and /apis", async () => {
    const api = await t.call("GET", "/api");
    assert.equal(api.status, 200);
    assert.equal(api.headers["content-type"], "application/json");
    assert.deepEqual(api.json, {
      kind: "APIVersions",
      versions: ["v1"],
      serverAddressByClientCIDRs: [{ clientCIDR: "0.0.0.0/0", serverAddress: "10.0.0.1:6443" }],
    });
    // kubectl 1.20 asks for plain JSON (`application/json, */*`): the legacy documents.
    const apis = await t.call("GET", "/apis", { headers: { Accept: "application/json, */*" } });
    assert.equal(apis.status, 200);
    assert.equal(apis.json["kind"], "APIGroupList");
    const groups = apis.json["groups"] as { name: string; preferredVersion: { groupVersion: string } }[];
    assert.deepEqual(groups.map((g) => g.name).sort(), [
      "apps",
      "authentication.k8s.io",
      "authorization.k8s.io",
      "autoscaling",
      "batch",
      "certificates.k8s.io",
      "coordination.k8s.io",
      "metrics.k8s.io",
      "policy",
      "rbac.authorization.k8s.io",
    ]);
    assert.deepEqual(groups.find((g) => g.name === "apps")!.preferredVersion, { groupVersion: "apps/v1", version: "v1" });
    const g = await t.call("GET", "/apis/batch");
    assert.equal(g.json["kind"], "APIGroup");
  });

  it("serves aggregated discovery when asked for (v2, v2beta1), Content-Type echoing the negotiated type", async () => {
    const KUBECTL_132 =
      "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList,application/json;g=apidiscovery.k8s.io;v=v2beta1;as=APIGroupDiscoveryList,application/json";
    type Res = {
      resource: string;
      scope: string;
      singularResource: string;
      verbs: string[];
      shortNames?: string[];
      categories?: string[];
      responseKind: { kind: string };
      subresources?: { subresource: string; responseKind: { group: string; kind: string }; verbs: string[] }[];
    };
    type Group = { metadata: { name?: string }; versions: { version: string; resources: Res[]; freshness: string }[] };
    const core = await t.call("GET", "/api", { headers: { Accept: KUBECTL_132 } });
    assert.equal(core.status, 200);
    assert.equal(core.headers["content-type"], "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList");
    assert.equal(core.json["kind"], "APIGroupDiscoveryList");
    assert.equal(core.json["apiVersion"], "apidiscovery.k8s.io/v2");
    const [coreGroup] = core.json["items"] as Group[];
    assert.equal(coreGroup?.metadata.name, undefined);
    const v1 = coreGroup?.versions[0];
    assert.equal(v1?.version, "v1");
    assert.equal(v1?.freshness, "Current");
    const pods = v1?.resources.find((r) => r.resource === "pods");
    assert.deepEqual(
      { scope: pods?.scope, singular: pods?.singularResource, short: pods?.shortNames, categories: pods?.categories, kind: pods?.responseKind.kind },
      { scope: "Namespaced", singular: "pod", short: ["po"], categories: ["all"], kind: "Pod" },
    );
    assert.deepEqual(pods?.subresources?.map((s) => s.subresource).sort(), ["attach", "binding", "ephemeralcontainers", "eviction", "exec", "log", "status"]);
    const nodes = v1?.resources.find((r) => r.resource === "nodes");
    assert.equal(nodes?.scope, "Cluster");
    const rcScale = v1?.resources.find((r) => r.resource === "replicationcontrollers")?.subresources?.find((s) => s.subresource === "scale");
    assert.deepEqual(rcScale?.responseKind, { group: "autoscaling", version: "v1", kind: "Scale" });
    // Every kind of the core group is listed, nothing else.
    assert.deepEqual(
      v1?.resources.map((r) => r.resource).sort(),
      KINDS.filter((k) => k.group === "")
        .map((k) => k.resource)
        .sort(),
    );

    const beta = await t.call("GET", "/apis", { headers: { Accept: "application/json;g=apidiscovery.k8s.io;v=v2beta1;as=APIGroupDiscoveryList" } });
    assert.equal(beta.headers["content-type"], "application/json;g=apidiscovery.k8s.io;v=v2beta1;as=APIGroupDiscoveryList");
    const groups = beta.json["items"] as Group[];
    assert.deepEqual(groups.map((g) => g.metadata.name).sort(), [
      "apps",
      "authentication.k8s.io",
      "authorization.k8s.io",
      "autoscaling",
      "batch",
      "certificates.k8s.io",
      "coordination.k8s.io",
      "metrics.k8s.io",
      "policy",
      "rbac.authorization.k8s.io",
    ]);
    const ds = groups.find((g) => g.metadata.name === "apps")?.versions[0]?.resources[0];
    assert.deepEqual([ds?.resource, ds?.shortNames, ds?.categories], ["daemonsets", ["ds"], ["all"]]);
    // An ETag, and If-None-Match with it → 304 without a body.
    const etag = String(beta.headers["etag"]);
    assert.match(etag, /^"[0-9a-f]{64}"$/);
    const again = await t.call("GET", "/apis", {
      headers: { Accept: "application/json;g=apidiscovery.k8s.io;v=v2beta1;as=APIGroupDiscoveryList", "If-None-Match": etag },
    });
    assert.equal(again.status, 304);
    assert.equal(again.text, "");
    // Plain JSON first wins over an aggregated type listed later.
    const plain = await t.call("GET", "/apis", { headers: { Accept: `application/json,${KUBECTL_132}` } });
    assert.equal(plain.json["kind"], "APIGroupList");
  });

  it("serves resource lists with subresources", async () => {
    const r = await t.call("GET", "/api/v1");
    assert.equal(r.status, 200);
    assert.equal(r.json["groupVersion"], "v1");
    const res = r.json["resources"] as Record<string, unknown>[];
    const byName = new Map(res.map((x) => [x["name"], x]));
    assert.deepEqual(byName.get("pods"), {
      name: "pods",
      singularName: "pod",
      namespaced: true,
      kind: "Pod",
      verbs: ["create", "delete", "deletecollection", "get", "list", "patch", "update", "watch"],
      shortNames: ["po"],
      categories: ["all"],
    });
    assert.deepEqual(byName.get("pods/log"), { name: "pods/log", singularName: "", namespaced: true, kind: "Pod", verbs: ["get"] });
    assert.deepEqual(byName.get("pods/binding")!["verbs"], ["create"]);
    assert.deepEqual(byName.get("pods/eviction"), {
      name: "pods/eviction",
      singularName: "",
      namespaced: true,
      group: "policy",
      version: "v1",
      kind: "Eviction",
      verbs: ["create"],
    });
    assert.equal(byName.get("pods/status")!["kind"], "Pod");
    assert.deepEqual(byName.get("replicationcontrollers/scale"), {
      name: "replicationcontrollers/scale",
      singularName: "",
      namespaced: true,
      group: "autoscaling",
      version: "v1",
      kind: "Scale",
      verbs: ["get", "patch", "update"],
    });
    assert.equal(byName.get("nodes")!["namespaced"], false);
    assert.ok(!byName.has("events/status"));
    const apps = await t.call("GET", "/apis/apps/v1");
    assert.equal(apps.json["groupVersion"], "apps/v1");
    assert.deepEqual(
      (apps.json["resources"] as { name: string }[]).map((x) => x.name),
      ["daemonsets", "daemonsets/status", "replicasets", "replicasets/scale", "replicasets/status", "deployments", "deployments/scale", "deployments/status"],
    );
    const autoscaling = await t.call("GET", "/apis/autoscaling/v1");
    assert.equal(autoscaling.status, 200);
    assert.deepEqual(autoscaling.json["resources"], []);
  });

  it("serves version, health and openapi", async () => {
    const v = await t.call("GET", "/version");
    assert.equal(v.json["major"], "1");
    assert.equal(v.json["minor"], "32");
    assert.equal(v.json["gitVersion"], "v1.32.0-choreo");
    const h = await t.call("GET", "/healthz");
    assert.equal(h.status, 200);
    assert.equal(h.text, "ok");
    for (const p of ["/readyz", "/livez"]) assert.equal((await t.call("GET", p)).status, 200);
    const o = await t.call("GET", "/openapi/v2");
    assert.equal(o.status, 200);
    assert.equal(o.headers["content-type"], "application/json");
    assert.equal(o.json["swagger"], "2.0");
    assert.equal((await t.call("GET", "/openapi/v3")).status, 200);
  });

  it("answers unknown paths and methods with a Status", async () => {
    const r = await t.call("GET", "/api/v1/namespaces/default/foos");
    assert.equal(r.status, 404);
    assert.equal(r.headers["content-type"], "application/json");
    assert.equal(r.json["kind"], "Status");
    assert.equal(r.json["reason"], "NotFound");
    assert.equal(r.json["message"], "the server could not find the requested resource");
    assert.equal(r.json["code"], 404);
    assert.equal((await t.call("GET", "/apis/apps/v1/namespaces/default/pods")).status, 404);
    for (const m of ["HEAD", "OPTIONS"]) {
      const x = await t.call(m, "/api/v1/namespaces/default/pods");
      assert.equal(x.status, 405, m);
    }
    const post = await t.call("POST", "/api");
    assert.equal(post.status, 405);
    assert.equal(post.json["reason"], "MethodNotAllowed");
  });

  it("measures requests", async () => {
    await t.call("GET", "/api/v1/namespaces/default/pods");
    const text = await registry.metrics();
    assert.match(text, /choreo_api_http_request_duration_seconds_count\{verb="list",resource="pods",code="200"\} \d+/);
  });
});
