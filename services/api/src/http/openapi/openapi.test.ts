// The generated OpenAPI: every served kind has a definition named as
// Kubernetes names it, every $ref resolves, descriptions come from the proto
// comments; the v2/v3 endpoints with their ETag, hash and redirect behaviour,
// and the gnostic protobuf encoding read back field by field.
import assert from "node:assert/strict";
import { after, before, describe, it } from "node:test";
import { KINDS } from "@choreo/kit";
import { groupVersions } from "../routes.js";
import { startTestGateway, type TestGateway } from "../testing/harness.js";
import { openapiV2, openapiV3, v3GroupVersions } from "./documents.js";
import { encodeV2Document } from "./gnostic.js";
import { definitionName, definitions, INT_OR_STRING, listName, type Schema } from "./schema.js";

/** Every `$ref` in a document. */
function refs(v: unknown, out: string[] = []): string[] {
  if (Array.isArray(v)) for (const x of v) refs(x, out);
  else if (v && typeof v === "object") {
    for (const [k, x] of Object.entries(v)) {
      if (k === "$ref" && typeof x === "string") out.push(x);
      else refs(x, out);
    }
  }
  return out;
}

const props = (s: Schema | undefined) => (s?.["properties"] ?? {}) as Record<string, Schema>;

describe("openapi schema", () => {
  const defs = definitions();

  it("names definitions as Kubernetes does, with x-kubernetes-group-version-kind on every kind and list", () => {
    assert.equal(definitionName("choreo.core.v1.Pod"), "io.k8s.api.core.v1.Pod");
    assert.equal(definitionName("choreo.apps.v1.DaemonSet"), "io.k8s.api.apps.v1.DaemonSet");
    assert.equal(definitionName("choreo.meta.v1.ObjectMeta"), "io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta");
    assert.equal(definitionName("choreo.core.v1.IntOrString"), INT_OR_STRING);
    for (const k of KINDS) {
      const d = defs[definitionName(k.protoType)];
      assert.ok(d, `${k.kind} has a definition`);
      assert.deepEqual(d["x-kubernetes-group-version-kind"], [{ group: k.group, version: k.version, kind: k.kind }], k.kind);
      assert.deepEqual(props(d)["metadata"]?.["$ref"], "#/definitions/io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta", k.kind);
      const list = defs[listName(k)];
      assert.deepEqual(list?.["x-kubernetes-group-version-kind"], [{ group: k.group, version: k.version, kind: `${k.kind}List` }]);
      assert.deepEqual(list?.["required"], ["items"]);
    }
  });

  it("resolves every $ref of the v2 document and of each v3 document", () => {
    const v2 = openapiV2();
    const v2defs = v2["definitions"] as Record<string, Schema>;
    for (const r of refs(v2)) assert.ok(r.startsWith("#/definitions/") && r.slice(14) in v2defs, r);
    assert.deepEqual(
      v3GroupVersions().sort(),
      groupVersions()
        .map((gv) => (gv.group ? `apis/${gv.group}/${gv.version}` : `api/${gv.version}`))
        .sort(),
    );
    assert.ok(v3GroupVersions().includes("api/v1") && v3GroupVersions().includes("apis/apps/v1"));
    for (const gv of v3GroupVersions()) {
      const doc = openapiV3(gv);
      const schemas = (doc?.["components"] as { schemas: Record<string, Schema> }).schemas;
      for (const r of refs(doc)) assert.ok(r.startsWith("#/components/schemas/") && r.slice(21) in schemas, `${gv}: ${r}`);
    }
    assert.equal(openapiV3("apis/nope/v1"), undefined);
  });

  it("writes Kubernetes' types: int-or-string, quantities, times, bytes, maps, arrays, required", () => {
    const port = props(defs["io.k8s.api.core.v1.HTTPGetAction"])["port"];
    assert.equal(port?.["$ref"], `#/definitions/${INT_OR_STRING}`);
    assert.deepEqual(defs[INT_OR_STRING]?.["format"], "int-or-string");
    const limits = props(defs["io.k8s.api.core.v1.ResourceRequirements"])["limits"];
    assert.deepEqual(limits?.["additionalProperties"], { $ref: "#/definitions/io.k8s.apimachinery.pkg.api.resource.Quantity" });
    const created = props(defs["io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta"])["creationTimestamp"];
    assert.equal(created?.["$ref"], "#/definitions/io.k8s.apimachinery.pkg.apis.meta.v1.Time");
    assert.deepEqual(defs["io.k8s.apimachinery.pkg.apis.meta.v1.Time"]?.["format"], "date-time");
    assert.equal(props(defs["io.k8s.api.coordination.v1.LeaseSpec"])["renewTime"]?.["$ref"], "#/definitions/io.k8s.apimachinery.pkg.apis.meta.v1.MicroTime");
    assert.deepEqual(props(defs["io.k8s.api.core.v1.ConfigMap"])["binaryData"]?.["additionalProperties"], { type: "string", format: "byte" });
    assert.deepEqual(props(defs["io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta"])["labels"]?.["additionalProperties"], { type: "string" });
    const containers = props(defs["io.k8s.api.core.v1.PodSpec"])["containers"];
    assert.equal(containers?.["type"], "array");
    assert.deepEqual(containers?.["items"], { $ref: "#/definitions/io.k8s.api.core.v1.Container" });
    assert.equal(containers?.["x-kubernetes-patch-merge-key"], "name");
    assert.deepEqual(defs["io.k8s.api.core.v1.PodSpec"]?.["required"], ["containers"]);
    assert.deepEqual(defs["io.k8s.api.core.v1.Container"]?.["required"], ["name"]);
    // Kubernetes' JSON names, not proto's camelCase.
    assert.ok("podIP" in props(defs["io.k8s.api.core.v1.PodStatus"]));
    assert.ok("clusterIP" in props(defs["io.k8s.api.core.v1.ServiceSpec"]));
  });

  it("takes descriptions from the proto comments", () => {
    const probe = defs["io.k8s.api.core.v1.Probe"];
    assert.match(String(probe?.["description"]), /health check/);
    assert.match(String(props(probe)["periodSeconds"]?.["description"]), /How often \(in seconds\) to perform the probe/);
    assert.match(String(props(defs["io.k8s.api.core.v1.Container"])["livenessProbe"]?.["description"]), /restarted if the probe\s+fails/);
    assert.match(String(props(defs["io.k8s.api.core.v1.PodStatus"])["phase"]?.["description"] ?? ""), /Pending/);
    // Every kind: a described kind and described metadata.
    for (const k of KINDS) {
      const d = defs[definitionName(k.protoType)];
      assert.ok(String(d?.["description"] ?? "").length > 10, `${k.kind} is described`);
      assert.ok(String(props(d)["metadata"]?.["description"] ?? "").length > 0, `${k.kind}.metadata is described`);
    }
    // The conventions apply to kinds only: a condition's status keeps its own (or none).
    assert.doesNotMatch(String(props(defs["io.k8s.api.core.v1.PodCondition"])["status"]?.["description"] ?? ""), /Most recently observed/);
  });

  it("declares fieldValidation on writes (kubectl --validate=strict then asks the server) and every verb of every kind", () => {
    const paths = openapiV2()["paths"] as Record<string, Record<string, Schema>>;
    for (const k of KINDS) {
      const prefix = k.group ? `/apis/${k.group}/${k.version}` : "/api/v1";
      const coll = k.namespaced ? `${prefix}/namespaces/{namespace}/${k.resource}` : `${prefix}/${k.resource}`;
      assert.deepEqual(Object.keys(paths[coll] ?? {}).sort(), ["delete", "get", "parameters", "post"], coll);
      assert.deepEqual(Object.keys(paths[`${coll}/{name}`] ?? {}).sort(), ["delete", "get", "parameters", "patch", "put"], coll);
      const post = paths[coll]?.["post"];
      assert.deepEqual(post?.["x-kubernetes-group-version-kind"], { group: k.group, version: k.version, kind: k.kind });
      assert.ok((post?.["parameters"] as { name: string }[]).some((p) => p.name === "fieldValidation"));
      if (k.hasStatus) assert.ok(paths[`${coll}/{name}/status`], `${k.resource}/status`);
      if (k.hasScale) assert.equal((paths[`${coll}/{name}/scale`]?.["get"]?.["x-kubernetes-group-version-kind"] as { kind: string }).kind, "Scale");
    }
  });
});

/** A tiny protobuf reader for the test: the length-delimited fields of a message, by number. */
function fields(buf: Buffer): Map<number, Buffer[]> {
  const out = new Map<number, Buffer[]>();
  let i = 0;
  const varint = () => {
    let v = 0;
    let mul = 1;
    for (;;) {
      const b = buf[i++] as number;
      v += (b & 0x7f) * mul;
      mul *= 128;
      if (b < 0x80) return v;
    }
  };
  while (i < buf.length) {
    const tag = varint();
    const wire = tag % 8;
    if (wire === 0) {
      out.set(tag >> 3, [...(out.get(tag >> 3) ?? []), Buffer.from([varint()])]);
      continue;
    }
    assert.equal(wire, 2);
    const len = varint();
    out.set(tag >> 3, [...(out.get(tag >> 3) ?? []), buf.subarray(i, i + len)]);
    i += len;
  }
  return out;
}

describe("gnostic protobuf (openapi_v2.Document)", () => {
  it("encodes swagger, definitions with properties, descriptions and the GVK vendor extension", () => {
    const doc = Buffer.from(encodeV2Document(openapiV2()));
    const top = fields(doc);
    assert.equal(top.get(1)?.[0]?.toString(), "2.0");
    const defs = fields(top.get(9)?.[0] as Buffer).get(1) ?? [];
    const named = new Map(defs.map((d) => [fields(d).get(1)?.[0]?.toString(), fields(d).get(2)?.[0] as Buffer]));
    assert.equal(named.size, Object.keys(openapiV2()["definitions"] as object).length);
    const pod = fields(named.get("io.k8s.api.core.v1.Pod") as Buffer);
    assert.match(pod.get(4)?.[0]?.toString() ?? "", /collection of containers/); // description
    assert.equal(
      fields(pod.get(22)?.[0] as Buffer)
        .get(1)?.[0]
        ?.toString(),
      "object",
    ); // type
    const ext = fields(pod.get(31)?.[0] as Buffer);
    assert.equal(ext.get(1)?.[0]?.toString(), "x-kubernetes-group-version-kind");
    assert.deepEqual(
      JSON.parse(
        fields(ext.get(2)?.[0] as Buffer)
          .get(2)?.[0]
          ?.toString() ?? "",
      ),
      [{ group: "", version: "v1", kind: "Pod" }],
    );
    const propNames = (fields(pod.get(25)?.[0] as Buffer).get(1) ?? []).map((p) => fields(p).get(1)?.[0]?.toString());
    assert.deepEqual(propNames, ["apiVersion", "kind", "metadata", "spec", "status"]);
    // Paths: every path of the JSON document.
    const paths = (fields(top.get(8)?.[0] as Buffer).get(2) ?? []).map((p) => fields(p).get(1)?.[0]?.toString());
    assert.deepEqual(paths, Object.keys(openapiV2()["paths"] as object));
  });
});

describe("openapi endpoints", () => {
  let t: TestGateway;
  before(async () => {
    t = await startTestGateway();
  });
  after(() => t.close());

  it("serves /openapi/v2 in JSON, and in protobuf when asked (kubectl 1.20's Accept), with an ETag honoured by If-None-Match", async () => {
    const json = await t.call("GET", "/openapi/v2", { headers: { Accept: "application/json" } });
    assert.equal(json.status, 200);
    assert.equal(json.json["swagger"], "2.0");
    const etag = String(json.headers["etag"]);
    assert.match(etag, /^"[0-9A-F]{128}"$/);
    const again = await t.call("GET", "/openapi/v2", { headers: { Accept: "application/json", "If-None-Match": etag } });
    assert.equal(again.status, 304);
    assert.equal(again.text, "");
    const pb = await t.call("GET", "/openapi/v2", { headers: { Accept: "application/com.github.proto-openapi.spec.v2@v1.0+protobuf" } });
    assert.equal(pb.status, 200);
    assert.equal(pb.headers["content-type"], "application/com.github.proto-openapi.spec.v2.v1.0+protobuf");
    assert.notEqual(pb.headers["etag"], etag);
    const bad = await t.call("GET", "/openapi/v2", { headers: { Accept: "text/html" } });
    assert.equal(bad.status, 406);
    assert.equal(bad.json["kind"], "Status");
  });

  it("serves the v3 index with hashed URLs; a current hash is immutable, a stale one redirects, an unknown group-version is 404", async () => {
    const index = await t.call("GET", "/openapi/v3");
    assert.equal(index.status, 200);
    const paths = index.json["paths"] as Record<string, { serverRelativeURL: string }>;
    assert.deepEqual(Object.keys(paths).sort(), v3GroupVersions().sort());
    const url = paths["api/v1"]?.serverRelativeURL ?? "";
    assert.match(url, /^\/openapi\/v3\/api\/v1\?hash=[0-9A-F]{128}$/);
    const doc = await t.call("GET", url);
    assert.equal(doc.status, 200);
    assert.equal(doc.headers["cache-control"], "public, immutable");
    assert.equal(doc.headers["etag"], `"${url.split("hash=")[1]}"`);
    assert.equal(doc.json["openapi"], "3.0.0");
    const schemas = (doc.json["components"] as { schemas: Record<string, Schema> }).schemas;
    assert.ok(schemas["io.k8s.api.core.v1.Pod"]);
    assert.equal(schemas["io.k8s.api.apps.v1.DaemonSet"], undefined, "api/v1 holds only what its paths reach");
    assert.deepEqual(schemas[INT_OR_STRING]?.["oneOf"], [{ type: "integer" }, { type: "string" }]);
    // A described reference is wrapped in allOf, as Kubernetes writes it.
    assert.deepEqual((props(schemas["io.k8s.api.core.v1.Container"])["livenessProbe"]?.["allOf"] as unknown[])[0], {
      $ref: "#/components/schemas/io.k8s.api.core.v1.Probe",
    });
    const plain = await t.call("GET", "/openapi/v3/api/v1");
    assert.equal(plain.status, 200);
    assert.equal(plain.headers["cache-control"], "no-cache, private");
    const stale = await t.call("GET", "/openapi/v3/api/v1?hash=0BAD");
    assert.equal(stale.status, 301);
    assert.equal(stale.headers["location"], url);
    assert.equal((await t.call("GET", "/openapi/v3/apis/nope/v1")).status, 404);
    assert.equal(
      (await t.call("GET", "/openapi/v3/api/v1", { headers: { Accept: "application/com.github.proto-openapi.spec.v3@v1.0+protobuf" } })).status,
      406,
    );
  });
});
