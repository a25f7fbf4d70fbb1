import assert from "node:assert/strict";
import { after, before, describe, it } from "node:test";
import type { PatchRequest } from "@choreo/kit/gen/choreo/api/v1/api";
import type { LogsHandler } from "../handlers/api-handlers.js";
import { pod, startTestGateway, type TestGateway } from "./testing/harness.js";

const PODS = "/api/v1/namespaces/default/pods";
const TABLE = "application/json;as=Table;v=v1;g=meta.k8s.io,application/json;as=Table;v=v1beta1;g=meta.k8s.io,application/json";

const meta = (j: Record<string, unknown>) => j["metadata"] as Record<string, unknown>;

function assertStatus(r: { status: number; json: Record<string, unknown>; headers: Record<string, unknown> }, code: number, reason: string): void {
  assert.equal(r.status, code, JSON.stringify(r.json));
  assert.equal(r.headers["content-type"], "application/json");
  assert.equal(r.json["kind"], "Status");
  assert.equal(r.json["apiVersion"], "v1");
  assert.deepEqual(r.json["metadata"], {});
  assert.equal(r.json["status"], "Failure");
  assert.equal(r.json["reason"], reason);
  assert.equal(r.json["code"], code);
  assert.equal(typeof r.json["message"], "string");
}

describe("CRUD", () => {
  let t: TestGateway;
  const logs: LogsHandler = {
    async *logs(req) {
      yield `container=${req.container ?? "<default>"} follow=${req.follow}\n`;
      yield "line 2\n";
    },
  };
  before(async () => {
    t = await startTestGateway({ logs });
  });
  after(() => t.close());

  it("creates, gets, lists, updates, deletes with Kubernetes codes", async () => {
    const c = await t.call("POST", `${PODS}?fieldManager=kubectl-create&fieldValidation=Strict`, { body: pod("web") });
    assert.equal(c.status, 201);
    assert.equal(c.json["kind"], "Pod");
    assert.equal(c.json["apiVersion"], "v1");
    assert.equal(meta(c.json)["namespace"], "default");
    const rv = meta(c.json)["resourceVersion"] as string;
    assert.ok(rv);

    const g = await t.call("GET", `${PODS}/web`);
    assert.equal(g.status, 200, g.text);
    assert.equal(meta(g.json)["name"], "web");

    const l = await t.call("GET", `${PODS}?limit=500`);
    assert.equal(l.status, 200, l.text);
    assert.equal(l.json["kind"], "PodList");
    assert.equal(l.json["apiVersion"], "v1");
    assert.ok(meta(l.json)["resourceVersion"]);
    const items = l.json["items"] as Record<string, unknown>[];
    assert.equal(items.length, 1);
    assert.equal(items[0]!["kind"], "Pod");

    const all = await t.call("GET", "/api/v1/pods");
    assert.equal((all.json["items"] as unknown[]).length, 1);

    const sel = await t.call("GET", `${PODS}?labelSelector=app+in+%28web%2Cdb%29%2C%21tier`);
    assert.equal((sel.json["items"] as unknown[]).length, 1, "form-encoded selector");
    const none = await t.call("GET", `${PODS}?labelSelector=app%3Ddb`);
    assert.equal((none.json["items"] as unknown[]).length, 0);

    const upd = { ...g.json, metadata: { ...meta(g.json), labels: { app: "web", tier: "front" } } };
    const u = await t.call("PUT", `${PODS}/web`, { body: upd });
    assert.equal(u.status, 200, u.text);
    assert.deepEqual(meta(u.json)["labels"], { app: "web", tier: "front" });

    const stale = await t.call("PUT", `${PODS}/web`, { body: upd });
    assertStatus(stale, 409, "Conflict");

    const d = await t.call("DELETE", `${PODS}/web`, { body: { kind: "DeleteOptions", apiVersion: "v1", propagationPolicy: "Background" } });
    assert.equal(d.status, 200, d.text);
    assert.equal(meta(d.json)["name"], "web");
    const del = t.handlers.calls.filter((x) => x.method === "delete").at(-1)!.req as { options?: { propagationPolicy: string } };
    assert.equal(del.options?.propagationPolicy, "Background");
    assertStatus(await t.call("GET", `${PODS}/web`), 404, "NotFound");
  });

  it("returns Status bodies for 400, 404, 409, 413, 415, 422", async () => {
    const nf = await t.call("GET", `${PODS}/nope`);
    assertStatus(nf, 404, "NotFound");
    assert.equal(nf.json["message"], 'pods "nope" not found');
    assert.deepEqual(nf.json["details"], { name: "nope", kind: "pods" });

    assertStatus(await t.call("POST", PODS, { body: "{not json", headers: { "Content-Type": "application/json" } }), 400, "BadRequest");
    const unknown = await t.call("POST", `${PODS}?fieldValidation=Strict`, { body: { ...pod("x"), spec: { containers: [], foo: 1 } } });
    assertStatus(unknown, 400, "BadRequest");
    assert.match(unknown.json["message"] as string, /unknown field "spec.foo"/);
    const wrongKind = await t.call("POST", PODS, { body: { apiVersion: "v1", kind: "Service", metadata: { name: "s" } } });
    assertStatus(wrongKind, 400, "BadRequest");
    assertStatus(await t.call("POST", PODS, { body: { apiVersion: "v9", kind: "Pod", metadata: { name: "s" } } }), 400, "BadRequest");

    await t.call("POST", PODS, { body: pod("dup") });
    const dup = await t.call("POST", PODS, { body: pod("dup") });
    assertStatus(dup, 409, "AlreadyExists");
    assert.equal(dup.json["message"], 'pods "dup" already exists');

    const big = await t.call("POST", PODS, {
      body: JSON.stringify({ ...pod("big"), x: "a".repeat(3 * 1024 * 1024 + 10) }),
      headers: { "Content-Type": "application/json" },
    });
    assertStatus(big, 413, "RequestEntityTooLarge");

    assertStatus(
      await t.call("POST", PODS, { body: Buffer.from([0x6b, 0x38, 0x73, 0]), headers: { "Content-Type": "application/vnd.kubernetes.protobuf" } }),
      400,
      "BadRequest",
    );
    assertStatus(await t.call("POST", PODS, { body: "x", headers: { "Content-Type": "text/plain" } }), 415, "UnsupportedMediaType");

    const bad = pod("noimage");
    (bad["spec"] as { containers: { image?: string }[] }).containers[0]!.image = "";
    const inv = await t.call("POST", PODS, { body: bad });
    assertStatus(inv, 422, "Invalid");
    const causes = (inv.json["details"] as { causes: Record<string, string>[] }).causes;
    assert.deepEqual(causes, [{ reason: "FieldValueRequired", message: "Required value", field: "spec.containers[0].image" }]);
    assert.equal(inv.json["message"], 'Pod "noimage" is invalid: spec.containers[0].image: Required value');

    assertStatus(await t.call("GET", `${PODS}?limit=abc`), 400, "BadRequest");
    assertStatus(await t.call("GET", `${PODS}?fieldSelector=spec.foo%3Dx`), 400, "BadRequest");
    assertStatus(await t.call("POST", `${PODS}/dup`, { body: pod("dup") }), 405, "MethodNotAllowed");
    assertStatus(await t.call("POST", "/api/v1/pods", { body: pod("dup") }), 405, "MethodNotAllowed");
  });

  it("checks the namespace and name against the path", async () => {
    const mismatch = await t.call("POST", PODS, { body: pod("m", { metadata: { namespace: "other" } }) });
    assertStatus(mismatch, 400, "BadRequest");
    assert.equal(mismatch.json["message"], "the namespace of the provided object does not match the namespace sent on the request");
    const ok = await t.call("POST", "/api/v1/namespaces/other/pods", { body: pod("m", { metadata: { namespace: "other" } }) });
    assert.equal(ok.status, 201);
    const wrongName = await t.call("PUT", "/api/v1/namespaces/other/pods/zzz", { body: ok.json });
    assertStatus(wrongName, 400, "BadRequest");
    const ns = await t.call("POST", "/api/v1/namespaces", { body: { apiVersion: "v1", kind: "Namespace", metadata: { name: "team" } } });
    assert.equal(ns.status, 201);
    assert.equal(meta(ns.json)["namespace"], undefined);
    assert.equal((await t.call("GET", "/api/v1/namespaces/team")).status, 200);
  });

  it("accepts YAML bodies and defaults apiVersion/kind from the path", async () => {
    const yaml = "apiVersion: v1\nkind: Pod\nmetadata:\n  name: fromyaml\n  labels: {app: web}\nspec:\n  containers:\n  - name: c\n    image: nginx\n";
    const r = await t.call("POST", PODS, { body: yaml, headers: { "Content-Type": "application/yaml" } });
    assert.equal(r.status, 201, r.text);
    assert.equal(meta(r.json)["name"], "fromyaml");
    const bad = await t.call("POST", PODS, { body: "a: [1,\n  b", headers: { "Content-Type": "application/yaml" } });
    assertStatus(bad, 400, "BadRequest");
    const bare = await t.call("POST", PODS, { body: { metadata: { name: "bare" }, spec: { containers: [{ name: "c", image: "x" }] } } });
    assert.equal(bare.status, 201);
    assert.equal(bare.json["kind"], "Pod");
    const dry = await t.call("POST", `${PODS}?dryRun=All`, { body: pod("dry") });
    assert.equal(dry.status, 201);
    assert.equal((await t.call("GET", `${PODS}/dry`)).status, 404);
  });

  it("patches by content type", async () => {
    await t.call("POST", PODS, { body: pod("p") });
    const merge = await t.call("PATCH", `${PODS}/p`, {
      body: '{"metadata":{"labels":{"env":"prod"}}}',
      headers: { "Content-Type": "application/merge-patch+json" },
    });
    assert.equal(merge.status, 200, merge.text);
    assert.deepEqual(meta(merge.json)["labels"], { app: "web", env: "prod" });
    const json = await t.call("PATCH", `${PODS}/p`, {
      body: '[{"op":"remove","path":"/metadata/labels/env"}]',
      headers: { "Content-Type": "application/json-patch+json" },
    });
    assert.equal(json.status, 200, json.text);
    assert.deepEqual(meta(json.json)["labels"], { app: "web" });
    const smp = await t.call("PATCH", `${PODS}/p`, {
      body: '{"spec":{"containers":[{"name":"c","image":"nginx:2"}]}}',
      headers: { "Content-Type": "application/strategic-merge-patch+json" },
    });
    assert.equal(smp.status, 200, smp.text);
    const st = await t.call("PATCH", `${PODS}/p/status`, {
      body: '{"status":{"phase":"Running"}}',
      headers: { "Content-Type": "application/merge-patch+json" },
    });
    assert.equal(st.status, 200, st.text);
    const last = t.handlers.calls.filter((x) => x.method === "patch").at(-1)!.req as PatchRequest;
    assert.equal(last.subresource, "status");
    assert.equal(last.patchType, "application/merge-patch+json");
    assert.equal(last.patch, '{"status":{"phase":"Running"}}');

    // Server-side apply needs a field manager; with one it goes to the handlers as JSON (apply.test.ts covers the semantics).
    const apply = await t.call("PATCH", `${PODS}/p`, { body: "metadata: {}", headers: { "Content-Type": "application/apply-patch+yaml" } });
    assertStatus(apply, 400, "BadRequest");
    assert.match(apply.json["message"] as string, /fieldManager is required for apply requests/);
    await t.call("PATCH", `${PODS}/p?fieldManager=me&force=true`, {
      body: "metadata:\n  labels: {a: b}\n",
      headers: { "Content-Type": "application/apply-patch+yaml" },
    });
    const sent = t.handlers.calls.filter((x) => x.method === "patch").at(-1)!.req as PatchRequest;
    assert.deepEqual(
      [sent.patchType, sent.patch, sent.fieldManager, sent.force],
      ["application/apply-patch+yaml", '{"metadata":{"labels":{"a":"b"}}}', "me", true],
    );
    const forced = await t.call("PATCH", `${PODS}/p?force=true`, { body: "{}", headers: { "Content-Type": "application/merge-patch+json" } });
    assertStatus(forced, 400, "BadRequest");
    assertStatus(await t.call("PATCH", `${PODS}/p`, { body: "{}", headers: { "Content-Type": "application/json" } }), 415, "UnsupportedMediaType");
    assertStatus(await t.call("PATCH", `${PODS}/p`, { body: "{", headers: { "Content-Type": "application/merge-patch+json" } }), 400, "BadRequest");
    const stale = await t.call("PATCH", `${PODS}/p`, {
      body: '{"metadata":{"resourceVersion":"1","labels":{"x":"y"}}}',
      headers: { "Content-Type": "application/merge-patch+json" },
    });
    assertStatus(stale, 409, "Conflict");
  });

  it("updates status through PUT .../status", async () => {
    const g = await t.call("GET", `${PODS}/p`);
    const body = { ...g.json, status: { phase: "Succeeded" } };
    const r = await t.call("PUT", `${PODS}/p/status`, { body });
    assert.equal(r.status, 200, r.text);
    assert.equal((r.json["status"] as { phase: string }).phase, "Succeeded");
    assert.equal(t.handlers.calls.at(-1)!.method, "updateStatus");
  });

  it("negotiates Tables", async () => {
    const l = await t.call("GET", `${PODS}?limit=500`, { headers: { Accept: TABLE } });
    assert.equal(l.status, 200, l.text);
    assert.equal(l.json["kind"], "Table");
    assert.equal(l.json["apiVersion"], "meta.k8s.io/v1");
    assert.ok(meta(l.json)["resourceVersion"]);
    const cols = l.json["columnDefinitions"] as { name: string }[];
    assert.equal(cols[0]!.name, "Name");
    const rows = l.json["rows"] as { cells: unknown[]; object?: Record<string, unknown> }[];
    assert.ok(rows.length >= 2);
    for (const row of rows) {
      assert.equal(row.cells.length, cols.length);
      assert.equal(row.object?.["kind"], "PartialObjectMetadata");
    }
    const full = await t.call("GET", `${PODS}?includeObject=Object`, { headers: { Accept: TABLE } });
    assert.equal((full.json["rows"] as { object: { kind: string } }[])[0]!.object.kind, "Pod");
    const none = await t.call("GET", `${PODS}?includeObject=None`, { headers: { Accept: TABLE } });
    assert.equal((none.json["rows"] as { object?: unknown }[])[0]!.object, undefined);
    const one = await t.call("GET", `${PODS}/p`, { headers: { Accept: TABLE } });
    assert.equal(one.json["kind"], "Table");
    assert.equal((one.json["rows"] as unknown[]).length, 1);
    const beta = await t.call("GET", `${PODS}/p`, { headers: { Accept: "application/json;as=Table;v=v1beta1;g=meta.k8s.io" } });
    assert.equal(beta.json["apiVersion"], "meta.k8s.io/v1beta1");
    const plain = await t.call("GET", `${PODS}/p`, { headers: { Accept: "application/json" } });
    assert.equal(plain.json["kind"], "Pod");
    assertStatus(
      await t.call("GET", `${PODS}/p`, { headers: { Accept: "application/vnd.kubernetes.protobuf;as=Table;v=v1;g=meta.k8s.io" } }),
      406,
      "NotAcceptable",
    );
  });

  it("serves the scale subresource", async () => {
    const rc = {
      apiVersion: "v1",
      kind: "ReplicationController",
      metadata: { name: "rc" },
      spec: {
        replicas: 1,
        selector: { app: "web" },
        template: { metadata: { labels: { app: "web" } }, spec: { containers: [{ name: "c", image: "nginx" }] } },
      },
    };
    const RC = "/api/v1/namespaces/default/replicationcontrollers/rc";
    assert.equal((await t.call("POST", "/api/v1/namespaces/default/replicationcontrollers", { body: rc })).status, 201);
    const s = await t.call("GET", `${RC}/scale`);
    assert.equal(s.status, 200, s.text);
    assert.equal(s.json["kind"], "Scale");
    assert.equal(s.json["apiVersion"], "autoscaling/v1");
    assert.deepEqual(s.json["spec"], { replicas: 1 });
    assert.equal((s.json["status"] as { selector: string }).selector, "app=web");
    const p = await t.call("PATCH", `${RC}/scale`, { body: '{"spec":{"replicas":3}}', headers: { "Content-Type": "application/merge-patch+json" } });
    assert.equal(p.status, 200, p.text);
    assert.deepEqual(p.json["spec"], { replicas: 3 });
    const jp = await t.call("PATCH", `${RC}/scale`, {
      body: '[{"op":"replace","path":"/spec/replicas","value":0}]',
      headers: { "Content-Type": "application/json-patch+json" },
    });
    assert.deepEqual(jp.json["spec"], {}, "replicas: 0 is omitted, as in Kubernetes (omitempty)");
    const put = await t.call("PUT", `${RC}/scale`, { body: { ...s.json, spec: { replicas: 5 } } });
    assertStatus(put, 409, "Conflict");
    const cur = await t.call("GET", `${RC}/scale`);
    const put2 = await t.call("PUT", `${RC}/scale`, { body: { ...cur.json, spec: { replicas: 5 } } });
    assert.equal(put2.status, 200, put2.text);
    assert.deepEqual(put2.json["spec"], { replicas: 5 });
    const rcNow = await t.call("GET", RC);
    assert.equal((rcNow.json["spec"] as { replicas: number }).replicas, 5);
    assertStatus(await t.call("GET", `${PODS}/p/scale`), 404, "NotFound");
    assertStatus(
      await t.call("PATCH", `${RC}/scale`, { body: "{}", headers: { "Content-Type": "application/apply-patch+yaml" } }),
      415,
      "UnsupportedMediaType",
    );
  });

  it("binds pods and serves logs", async () => {
    await t.call("POST", PODS, { body: pod("b") });
    const b = await t.call("POST", `${PODS}/b/binding`, {
      body: { apiVersion: "v1", kind: "Binding", metadata: { name: "b" }, target: { kind: "Node", name: "n1" } },
    });
    assert.equal(b.status, 201, b.text);
    assert.deepEqual(b.json, { kind: "Status", apiVersion: "v1", metadata: {}, status: "Success", code: 201 });
    assert.equal(((await t.call("GET", `${PODS}/b`)).json["spec"] as { nodeName: string }).nodeName, "n1");
    const again = await t.call("POST", `${PODS}/b/binding`, {
      body: { apiVersion: "v1", kind: "Binding", metadata: { name: "b" }, target: { kind: "Node", name: "n2" } },
    });
    assertStatus(again, 409, "Conflict");

    const log = await t.call("GET", `${PODS}/b/log?follow=true`);
    assert.equal(log.status, 200, log.text);
    assert.equal(log.headers["content-type"], "text/plain");
    assert.equal(log.text, "container=<default> follow=true\nline 2\n");
    const c = await t.call("GET", `${PODS}/b/log?container=side&tailLines=10`);
    assert.equal(c.text, "container=side follow=false\nline 2\n");
    assertStatus(await t.call("GET", `${PODS}/none/log`), 404, "NotFound");
  });

  it("evicts pods (policy/v1 Eviction, what kubectl drain sends): 201 Success and the pod deleted; a mismatched name, another kind, a missing pod refused", async () => {
    await t.call("POST", PODS, { body: pod("ev") });
    const eviction = (name: string, extra: Record<string, unknown> = {}) => ({
      apiVersion: "policy/v1",
      kind: "Eviction",
      metadata: { name, namespace: "default" },
      deleteOptions: { gracePeriodSeconds: 0 },
      ...extra,
    });
    assertStatus(await t.call("POST", `${PODS}/ev/eviction`, { body: eviction("other") }), 400, "BadRequest");
    assertStatus(await t.call("POST", `${PODS}/ev/eviction`, { body: eviction("ev", { kind: "Binding" }) }), 400, "BadRequest");
    assertStatus(await t.call("GET", `${PODS}/ev/eviction`), 405, "MethodNotAllowed");
    assert.equal((await t.call("GET", `${PODS}/ev`)).status, 200, "refused evictions delete nothing");
    const e = await t.call("POST", `${PODS}/ev/eviction`, { body: eviction("ev") });
    assert.equal(e.status, 201, e.text);
    assert.deepEqual(e.json, { kind: "Status", apiVersion: "v1", metadata: {}, status: "Success", code: 201 });
    assert.equal((await t.call("GET", `${PODS}/ev`)).status, 404);
    assertStatus(await t.call("POST", `${PODS}/ev/eviction`, { body: eviction("ev") }), 404, "NotFound");
  });

  it("deletes collections and takes options from the query", async () => {
    await t.call("POST", PODS, { body: pod("c1", { metadata: { labels: { batch: "x" } } }) });
    await t.call("POST", PODS, { body: pod("c2", { metadata: { labels: { batch: "x" } } }) });
    const d = await t.call("DELETE", `${PODS}?labelSelector=batch%3Dx&gracePeriodSeconds=0&propagationPolicy=Foreground`);
    assert.equal(d.status, 200, d.text);
    assert.equal(d.json["kind"], "PodList");
    assert.deepEqual(
      (d.json["items"] as Record<string, unknown>[]).map((i) => meta(i)["name"]),
      ["c1", "c2"],
    );
    const req = t.handlers.calls.find((x) => x.method === "deleteCollection")!.req as { options: { gracePeriodSeconds: number; propagationPolicy: string } };
    assert.equal(req.options.gracePeriodSeconds, 0);
    assert.equal(req.options.propagationPolicy, "Foreground");
    assertStatus(await t.call("DELETE", `${PODS}/p?propagationPolicy=Sideways`), 400, "BadRequest");
  });
});

describe("request size", () => {
  it("answers 413 to a chunked body over 3 MiB", async () => {
    const t = await startTestGateway();
    try {
      const { request } = await import("node:http");
      const r = await new Promise<{ status: number; body: string }>((resolve, reject) => {
        const req = request(new URL(PODS, t.base), { method: "POST", headers: { "Content-Type": "application/json" } }, (res) => {
          let body = "";
          res.on("data", (c: Buffer) => (body += c.toString()));
          res.on("end", () => resolve({ status: res.statusCode ?? 0, body }));
        });
        req.on("error", reject);
        const chunk = Buffer.alloc(256 * 1024, 0x61);
        for (let i = 0; i < 16; i++) req.write(chunk);
        req.end();
      });
      assert.equal(r.status, 413);
      assert.equal((JSON.parse(r.body) as { reason: string }).reason, "RequestEntityTooLarge");
    } finally {
      await t.close();
    }
  });
});

describe("without a logs handler", () => {
  it("answers 501 for logs", async () => {
    const t = await startTestGateway();
    try {
      await t.call("POST", PODS, { body: pod("x") });
      const r = await t.call("GET", `${PODS}/x/log`);
      assert.equal(r.status, 501);
      assert.equal(r.json["kind"], "Status");
    } finally {
      await t.close();
    }
  });
});
