import assert from "node:assert/strict";
import { before, describe, it } from "node:test";
import { unwrap } from "@choreo/kit";
import type { Secret } from "@choreo/kit/gen/choreo/core/v1/core";
import { fromKubeJson, toKubeJson } from "@choreo/kit/kube-json";
import { rejects } from "../../testing/api-assert.js";
import { startMemoryRegistry, type MemoryRegistry } from "../../testing/memory-registry.js";
import { jsonObjectError } from "./strategy.js";

const secret = (name: string, body: Record<string, unknown>) =>
  fromKubeJson({ apiVersion: "v1", kind: "Secret", metadata: { name, namespace: "default" }, ...body });
const b64 = (s: string): string => Buffer.from(s).toString("base64");

describe("secrets", () => {
  // On the in-memory storage: validation is the strategy's, no server needed.
  let s: MemoryRegistry;
  before(async () => {
    s = await startMemoryRegistry();
  });

  it("merges stringData into data (stringData wins), never returns or stores it, and defaults the type to Opaque", async () => {
    const created = toKubeJson(
      await s.client.create(secret("db", { data: { user: b64("admin"), password: b64("old") }, stringData: { password: "hunter2", host: "db.local" } })),
    );
    assert.deepEqual(created["data"], { host: b64("db.local"), password: b64("hunter2"), user: b64("admin") });
    assert.equal(created["stringData"], undefined);
    assert.equal(created["type"], "Opaque");
    const got = toKubeJson(await s.client.get("secrets", "default", "db"));
    assert.deepEqual(got["data"], created["data"]);
    assert.equal(got["stringData"], undefined);
    assert.deepEqual((unwrap(await s.client.get("secrets", "default", "db")) as Secret).stringData, {});
    // An update's stringData merges into the data it sends; an update without a type keeps the old one.
    const updated = toKubeJson(await s.client.update(fromKubeJson({ ...got, type: undefined, stringData: { user: "root" } })));
    assert.deepEqual(updated["data"], { host: b64("db.local"), password: b64("hunter2"), user: b64("root") });
    assert.equal(updated["type"], "Opaque");
    assert.equal(updated["stringData"], undefined);
    // stringData keys are data keys: validated as such.
    await rejects(
      s.client.create(secret("bad-sd", { stringData: { "a b": "x" } })),
      422,
      "Invalid",
      /^Secret "bad-sd" is invalid: data\[a b\]: Invalid value: "a b": a valid config key/,
    );
  });

  it("a type cannot change", async () => {
    await s.client.create(secret("typed", { type: "example.com/custom", data: { k: b64("v") } }));
    const cur = toKubeJson(await s.client.get("secrets", "default", "typed"));
    assert.equal(cur["type"], "example.com/custom");
    await rejects(
      s.client.update(fromKubeJson({ ...cur, type: "Opaque" })),
      422,
      "Invalid",
      /^Secret "typed" is invalid: type: Invalid value: "Opaque": field is immutable$/,
    );
    await rejects(
      s.client.patch("secrets", "default", "typed", "application/merge-patch+json", { type: "kubernetes.io/tls" }),
      422,
      "Invalid",
      /type: Invalid value/,
    );
  });

  it("checks the keys each well-known type needs, with Kubernetes' paths", async () => {
    const refused: [string, Record<string, unknown>, RegExp][] = [
      ["tls", { type: "kubernetes.io/tls", data: { "tls.crt": b64("c") } }, /^Secret "tls" is invalid: data\[tls\.key\]: Required value$/],
      ["tls2", { type: "kubernetes.io/tls" }, /^Secret "tls2" is invalid: \[data\[tls\.crt\]: Required value, data\[tls\.key\]: Required value\]$/],
      ["dcj", { type: "kubernetes.io/dockerconfigjson" }, /data\[\.dockerconfigjson\]: Required value/],
      [
        "dcj-bad",
        { type: "kubernetes.io/dockerconfigjson", data: { ".dockerconfigjson": b64("{nope") } },
        /data\[\.dockerconfigjson\]: Invalid value: "<secret contents redacted>": invalid character 'n' looking for beginning of object key string$/,
      ],
      ["dcfg", { type: "kubernetes.io/dockercfg", data: { other: b64("{}") } }, /data\[\.dockercfg\]: Required value/],
      ["basic", { type: "kubernetes.io/basic-auth" }, /\[data\[username\]: Required value, data\[password\]: Required value\]/],
      ["ssh", { type: "kubernetes.io/ssh-auth", data: { "ssh-privatekey": "" } }, /data\[ssh-privatekey\]: Required value/],
      ["sa", { type: "kubernetes.io/service-account-token" }, /metadata\.annotations\[kubernetes\.io\/service-account\.name\]: Required value/],
    ];
    for (const [name, body, message] of refused) {
      await rejects(s.client.create(secret(name, body)), 422, "Invalid", message);
      await rejects(s.client.get("secrets", "default", name), 404, "NotFound");
    }
    const accepted: [string, Record<string, unknown>][] = [
      ["tls-ok", { type: "kubernetes.io/tls", data: { "tls.crt": b64("c"), "tls.key": b64("k") } }],
      ["dcj-ok", { type: "kubernetes.io/dockerconfigjson", data: { ".dockerconfigjson": b64('{"auths":{}}') } }],
      ["dcfg-ok", { type: "kubernetes.io/dockercfg", stringData: { ".dockercfg": "{}" } }],
      ["basic-ok", { type: "kubernetes.io/basic-auth", stringData: { password: "" } }],
      ["ssh-ok", { type: "kubernetes.io/ssh-auth", stringData: { "ssh-privatekey": "k" } }],
      [
        "sa-ok",
        {
          type: "kubernetes.io/service-account-token",
          metadata: { name: "sa-ok", namespace: "default", annotations: { "kubernetes.io/service-account.name": "default" } },
        },
      ],
    ];
    for (const [name, body] of accepted) await s.client.create(secret(name, body));
    assert.equal(jsonObjectError("[]"), "json: cannot unmarshal array into Go value of type map[string]interface {}");
    assert.equal(jsonObjectError(""), "unexpected end of JSON input");
    assert.equal(jsonObjectError("null"), undefined);
    assert.equal(jsonObjectError(" x"), "invalid character 'x' looking for beginning of value");
    assert.equal(jsonObjectError('{"a":'), "unexpected end of JSON input");
  });

  it("refuses more than 1 MiB of data in all, accepts exactly 1 MiB", async () => {
    const half = "x".repeat(512 * 1024);
    await rejects(
      s.client.create(secret("big", { stringData: { a: half, b: half, c: "x" } })),
      422,
      "Invalid",
      /^Secret "big" is invalid: data: Too long: must have at most 1048576 bytes$/,
    );
    await rejects(s.client.get("secrets", "default", "big"), 404, "NotFound");
    await s.client.create(secret("exactly-1mib", { stringData: { a: half, b: half } }));
  });

  it("once immutable, refuses changing data and unsetting immutable; metadata may still change", async () => {
    await s.client.create(secret("frozen", { stringData: { k: "v" }, immutable: true }));
    const cur = toKubeJson(await s.client.get("secrets", "default", "frozen"));
    assert.equal(cur["immutable"], true);
    const edited = (body: Record<string, unknown>) => fromKubeJson({ ...cur, ...body });
    await rejects(
      s.client.update(edited({ data: { k: b64("w") } })),
      422,
      "Invalid",
      /^Secret "frozen" is invalid: data: Forbidden: field is immutable when `immutable` is set$/,
    );
    await rejects(s.client.update(edited({ stringData: { k: "w" } })), 422, "Invalid", /data: Forbidden: field is immutable/);
    await rejects(s.client.update(edited({ immutable: false })), 422, "Invalid", /immutable: Forbidden: field is immutable when `immutable` is set/);
    await rejects(s.client.patch("secrets", "default", "frozen", "application/merge-patch+json", { immutable: null }), 422, "Invalid", /immutable: Forbidden/);
    const labelled = await s.client.update(edited({ metadata: { ...(cur["metadata"] as object), labels: { team: "a" } } }));
    assert.deepEqual(unwrap(labelled).metadata?.labels, { team: "a" });
    assert.deepEqual(toKubeJson(await s.client.get("secrets", "default", "frozen"))["data"], { k: b64("v") });
  });

  it("selects by type", async () => {
    const names = (await s.client.list("secrets", { namespace: "default", fieldSelector: "type=kubernetes.io/tls" })).items.map(
      (o) => unwrap(o).metadata?.name,
    );
    assert.deepEqual(names, ["tls-ok"]);
  });
});
