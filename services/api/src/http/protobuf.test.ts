// Kubernetes protobuf through the gateway: bodies, responses, Status errors, watch frames.
import assert from "node:assert/strict";
import http from "node:http";
import { after, before, describe, it } from "node:test";
import { decodeObject, decodeWatchFrames, encodeObject, MAGIC, PROTOBUF, type KubeJson } from "@choreo/kit/kube-proto";
import { pod, startTestGateway, until, type TestGateway } from "./testing/harness.js";

const PODS = "/api/v1/namespaces/default/pods";
const KUBECTL_ACCEPT = `${PROTOBUF},application/json`;

interface Raw {
  status: number;
  type: string;
  body: Buffer;
}

/** One request with a binary body; the whole response as bytes. */
function send(base: string, method: string, path: string, body?: Uint8Array | string, headers: Record<string, string> = {}): Promise<Raw> {
  return new Promise((resolve, reject) => {
    const req = http.request(
      new URL(path, base),
      { method, headers: { ...(body !== undefined ? { "Content-Length": String(Buffer.byteLength(body)) } : {}), ...headers } },
      (res) => {
        const chunks: Buffer[] = [];
        res.on("data", (c: Buffer) => chunks.push(c));
        res.on("end", () => resolve({ status: res.statusCode ?? 0, type: String(res.headers["content-type"] ?? ""), body: Buffer.concat(chunks) }));
        res.on("error", reject);
      },
    );
    req.on("error", reject);
    req.end(body);
  });
}

const protoHeaders = { "Content-Type": PROTOBUF, Accept: KUBECTL_ACCEPT };

describe("protobuf on the wire", () => {
  let t: TestGateway;
  before(async () => {
    t = await startTestGateway();
    t.handlers.seed({ apiVersion: "v1", kind: "Namespace", metadata: { name: "default" } });
  });
  after(() => t.close());

  it("creates from a protobuf body and answers in protobuf; the object reads back the same in JSON", async () => {
    const created = await send(t.base, "POST", PODS, encodeObject(pod("web")), protoHeaders);
    assert.equal(created.status, 201, created.body.toString());
    assert.equal(created.type, PROTOBUF);
    assert.deepEqual([...created.body.subarray(0, 4)], [...MAGIC]);
    const obj = decodeObject(created.body);
    assert.equal(obj["kind"], "Pod");
    assert.equal((obj["metadata"] as KubeJson)["name"], "web");

    const json = await t.call("GET", `${PODS}/web`, { headers: { Accept: "application/json" } });
    assert.equal(json.status, 200);
    assert.deepEqual(json.json, obj);

    const got = await send(t.base, "GET", `${PODS}/web`, undefined, { Accept: KUBECTL_ACCEPT });
    assert.equal(got.type, PROTOBUF);
    assert.deepEqual(decodeObject(got.body), obj);
  });

  it("lists in protobuf, JSON when JSON comes first, Tables stay JSON", async () => {
    const list = await send(t.base, "GET", PODS, undefined, { Accept: KUBECTL_ACCEPT });
    assert.equal(list.type, PROTOBUF);
    const l = decodeObject(list.body);
    assert.equal(l["kind"], "PodList");
    assert.equal((l["items"] as unknown[]).length, 1);

    const json = await send(t.base, "GET", PODS, undefined, { Accept: `application/json,${PROTOBUF}` });
    assert.equal(json.type, "application/json");
    const table = await send(t.base, "GET", PODS, undefined, { Accept: `application/json;as=Table;v=v1;g=meta.k8s.io,${PROTOBUF}` });
    assert.equal(table.type, "application/json");
    assert.equal((JSON.parse(table.body.toString()) as KubeJson)["kind"], "Table");
    const weighted = await send(t.base, "GET", PODS, undefined, { Accept: `application/json;q=0.5,${PROTOBUF}` });
    assert.equal(weighted.type, PROTOBUF);
  });

  it("updates from a protobuf body", async () => {
    const cur = await t.call("GET", `${PODS}/web`);
    const next = { ...cur.json, metadata: { ...(cur.json["metadata"] as KubeJson), labels: { app: "web", v: "2" } } };
    const r = await send(t.base, "PUT", `${PODS}/web`, encodeObject(next), protoHeaders);
    assert.equal(r.status, 200, r.body.toString());
    assert.deepEqual((decodeObject(r.body)["metadata"] as KubeJson)["labels"], { app: "web", v: "2" });
  });

  it("answers errors as a protobuf Status when protobuf was asked for", async () => {
    const r = await send(t.base, "GET", `${PODS}/nope`, undefined, { Accept: KUBECTL_ACCEPT });
    assert.equal(r.status, 404);
    assert.equal(r.type, PROTOBUF);
    const s = decodeObject(r.body);
    assert.equal(s["kind"], "Status");
    assert.equal(s["reason"], "NotFound");
    assert.equal(s["code"], 404);
  });

  it("refuses bad protobuf with a 400 and writes nothing", async () => {
    const good = Buffer.from(encodeObject(pod("bad")));
    const cases: [string, Uint8Array][] = [
      ["no magic", good.subarray(4)],
      ["truncated", good.subarray(0, good.length - 20)],
      ["unknown field", Buffer.concat([good, Buffer.from([0x98, 0x06, 0x01])])],
      ["empty", Buffer.alloc(0)],
    ];
    for (const [what, body] of cases) {
      const r = await send(t.base, "POST", PODS, body, { "Content-Type": PROTOBUF, Accept: "application/json" });
      assert.equal(r.status, 400, `${what}: ${r.body.toString()}`);
      assert.equal((JSON.parse(r.body.toString()) as KubeJson)["reason"], "BadRequest", what);
    }
    const wrongKind = await send(t.base, "POST", PODS, encodeObject({ apiVersion: "v1", kind: "ConfigMap", metadata: { name: "bad" } }), protoHeaders);
    assert.equal(wrongKind.status, 400);
    assert.equal(decodeObject(wrongKind.body)["reason"], "BadRequest");
    assert.equal((await t.call("GET", `${PODS}/bad`)).status, 404);
  });

  it("refuses a protobuf body over 3 MiB (413)", async () => {
    const big = encodeObject({ apiVersion: "v1", kind: "ConfigMap", metadata: { name: "big" }, data: { a: "x".repeat(3 * 1024 * 1024 + 10) } });
    const r = await send(t.base, "POST", "/api/v1/namespaces/default/configmaps", big, protoHeaders);
    assert.equal(r.status, 413);
    assert.equal(decodeObject(r.body)["reason"], "RequestEntityTooLarge");
    assert.equal((await t.call("GET", "/api/v1/namespaces/default/configmaps/big")).status, 404);
  });

  it("refuses a protobuf patch (415), as Kubernetes does", async () => {
    const r = await send(t.base, "PATCH", `${PODS}/web`, encodeObject(pod("web")), protoHeaders);
    assert.equal(r.status, 415);
    assert.equal(decodeObject(r.body)["reason"], "UnsupportedMediaType");
  });

  it("binds, evicts and scales with protobuf bodies", async () => {
    await t.call("POST", PODS, { body: pod("tobind") });
    const b = await send(
      t.base,
      "POST",
      `${PODS}/tobind/binding`,
      encodeObject({ apiVersion: "v1", kind: "Binding", metadata: { name: "tobind" }, target: { kind: "Node", name: "n1" } }),
      protoHeaders,
    );
    assert.equal(b.status, 201, b.body.toString());
    assert.equal(decodeObject(b.body)["status"], "Success");
    assert.equal(((await t.call("GET", `${PODS}/tobind`)).json["spec"] as KubeJson)["nodeName"], "n1");
    const ev = await send(
      t.base,
      "POST",
      `${PODS}/tobind/eviction`,
      encodeObject({ apiVersion: "policy/v1", kind: "Eviction", metadata: { name: "tobind", namespace: "default" }, deleteOptions: { gracePeriodSeconds: 0 } }),
      protoHeaders,
    );
    assert.equal(ev.status, 201, ev.body.toString());
    assert.equal(decodeObject(ev.body)["status"], "Success");
    assert.equal((await t.call("GET", `${PODS}/tobind`)).status, 404, "evicted");

    const rc = {
      apiVersion: "v1",
      kind: "ReplicationController",
      metadata: { name: "rc" },
      spec: { replicas: 1, selector: { app: "web" }, template: { metadata: { labels: { app: "web" } }, spec: pod("x")["spec"] } },
    };
    assert.equal((await t.call("POST", "/api/v1/namespaces/default/replicationcontrollers", { body: rc })).status, 201);
    const scale = await send(
      t.base,
      "PUT",
      "/api/v1/namespaces/default/replicationcontrollers/rc/scale",
      encodeObject({ apiVersion: "autoscaling/v1", kind: "Scale", metadata: { name: "rc", namespace: "default" }, spec: { replicas: 3 } }),
      protoHeaders,
    );
    assert.equal(scale.status, 200, scale.body.toString());
    assert.deepEqual(decodeObject(scale.body)["spec"], { replicas: 3 });
  });

  it("deletes with protobuf DeleteOptions, as client-go's typed clients send them", async () => {
    await t.call("POST", PODS, { body: pod("gone") });
    const opts = encodeObject({ apiVersion: "v1", kind: "DeleteOptions", gracePeriodSeconds: 0, propagationPolicy: "Background" });
    const r = await send(t.base, "DELETE", `${PODS}/gone`, opts, protoHeaders);
    assert.equal(r.status, 200, r.body.toString());
    assert.equal((decodeObject(r.body)["metadata"] as KubeJson)["name"], "gone");
    assert.equal((await t.call("GET", `${PODS}/gone`)).status, 404);
  });

  it("watches in length-delimited protobuf frames", async () => {
    const chunks: Buffer[] = [];
    const req = http.request(new URL(`${PODS}?watch=true&resourceVersion=0&timeoutSeconds=5`, t.base), { headers: { Accept: KUBECTL_ACCEPT } });
    const type = await new Promise<string>((resolve, reject) => {
      req.on("response", (res) => {
        res.on("data", (c: Buffer) => chunks.push(c));
        resolve(String(res.headers["content-type"]));
      });
      req.on("error", reject);
      req.end();
    });
    assert.equal(type, `${PROTOBUF};stream=watch`);
    await t.call("POST", PODS, { body: pod("watched") });
    const names = () => {
      try {
        return decodeWatchFrames(Buffer.concat(chunks)).map((e) => `${e.type} ${String((e.object["metadata"] as KubeJson)["name"])}`);
      } catch {
        return []; // a frame still arriving
      }
    };
    await until(() => names().includes("ADDED watched"), 8000, "the watched pod's ADDED frame");
    req.destroy();
    assert.ok(names().includes("ADDED web"), names().join());
  });
});
