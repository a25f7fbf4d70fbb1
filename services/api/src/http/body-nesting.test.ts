// Bodies nesting deeper than MAX_DEPTH are a 400 before any parser or patch
// code recurses into them (found by the gateway fuzzer: a 3,000-deep
// apply-patch YAML took the process down, out of memory, inside the YAML
// parser; deep merge patches overflowed the stack). Real manifests, with
// brackets and quotes inside strings, comments and block scalars, pass.
import assert from "node:assert/strict";
import { after, before, describe, it } from "node:test";
import { silentLogger } from "@choreo/kit/log";
import type { MemoryStore } from "../storage/memory-store.js";
import { startMemoryRegistry } from "../testing/memory-registry.js";
import { checkJsonNesting, checkYamlNesting, MAX_DEPTH } from "./body.js";
import { createGateway, type Gateway } from "./gateway.js";
import { call } from "./testing/harness.js";

const deepJson = (n: number) => '{"metadata":'.repeat(n) + "{}" + "}".repeat(n);

describe("request body nesting limit", () => {
  let gateway: Gateway;
  let storage: MemoryStore;
  let base: string;
  before(async () => {
    const m = await startMemoryRegistry();
    storage = m.storage;
    gateway = createGateway({ handlers: m.registry, log: silentLogger() });
    const { httpPort } = await gateway.listen({ host: "127.0.0.1", httpPort: 0 });
    base = `http://127.0.0.1:${httpPort}`;
    const pod = { apiVersion: "v1", kind: "Pod", metadata: { name: "web" }, spec: { containers: [{ name: "c", image: "nginx" }] } };
    assert.equal((await call(base, "POST", "/api/v1/namespaces/default/pods", { body: pod })).status, 201);
  });
  after(() => gateway.close());

  it("refuses deep JSON, YAML, patches and apply with a 400, changing nothing", async () => {
    const pods = "/api/v1/namespaces/default/pods";
    const cases: [method: string, path: string, type: string, body: string][] = [
      ["POST", pods, "application/json", deepJson(5000)],
      ["POST", pods, "application/json", "[".repeat(200_000) + "]".repeat(200_000)],
      ["PUT", `${pods}/web`, "application/json", deepJson(MAX_DEPTH + 1)],
      ["POST", pods, "application/yaml", "[".repeat(3000) + "]".repeat(3000)],
      ["POST", pods, "application/yaml", "- ".repeat(3000) + "x\n"],
      ["POST", pods, "application/yaml", Array.from({ length: 600 }, (_, i) => " ".repeat(i) + "a:").join("\n") + " 1\n"],
      ["PATCH", `${pods}/web`, "application/merge-patch+json", deepJson(3000)],
      ["PATCH", `${pods}/web`, "application/strategic-merge-patch+json", deepJson(3000)],
      ["PATCH", `${pods}/web`, "application/json-patch+json", "[" + deepJson(3000) + "]"],
      ["PATCH", `${pods}/web?fieldManager=x`, "application/apply-patch+yaml", deepJson(3000)],
      ["PATCH", `${pods}/web?fieldManager=x`, "application/apply-patch+yaml", "- ".repeat(3000) + "x\n"],
    ];
    for (const [method, path, type, body] of cases) {
      const before = await storage.currentRevision();
      const r = await call(base, method, path, { body, headers: { "Content-Type": type } });
      assert.equal(r.status, 400, `${method} ${type} ${body.slice(0, 30)}: ${r.text.slice(0, 200)}`);
      assert.match(String(r.json["message"]), /nests deeper than 100 levels/);
      assert.equal(await storage.currentRevision(), before);
    }
    assert.equal((await call(base, "GET", "/readyz")).status, 200);
  });

  it("counts structure, not brackets and quotes in strings, comments or block scalars", () => {
    const brackets = "[".repeat(500);
    checkJsonNesting(JSON.stringify({ a: brackets, b: `"${brackets}\\"`, c: [[[{}]]] }));
    checkYamlNesting(`apiVersion: v1
kind: ConfigMap
metadata:
  name: "${brackets}"   # ${brackets}
  annotations: {a: '${brackets}', b: "it's ${brackets}"}
data:
  script: |
    ${brackets}
    echo "it's"
  plain: it's ${"{".repeat(3)}
  list:
  - - - [a, {b: c}]
`);
    // Exactly MAX_DEPTH passes, one more does not.
    checkJsonNesting(deepJson(MAX_DEPTH - 1));
    checkYamlNesting("[".repeat(MAX_DEPTH) + "]".repeat(MAX_DEPTH));
    assert.throws(() => checkYamlNesting("[".repeat(MAX_DEPTH + 1)), /nests deeper/);
    assert.throws(() => checkJsonNesting(deepJson(MAX_DEPTH)), /nests deeper/);
  });
});

describe("YAML aliases", () => {
  it("an alias to its own ancestor is a 400 on create and on apply, changing nothing", async () => {
    const m = await startMemoryRegistry();
    const gateway = createGateway({ handlers: m.registry, log: silentLogger() });
    const { httpPort } = await gateway.listen({ host: "127.0.0.1", httpPort: 0 });
    try {
      const body = "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: x}\ndata: &a {b: *a}\n";
      for (const [method, path, type] of [
        ["POST", "/api/v1/namespaces/default/configmaps", "application/yaml"],
        ["PATCH", "/api/v1/namespaces/default/configmaps/x?fieldManager=m", "application/apply-patch+yaml"],
        ["PATCH", "/api/v1/namespaces/default/configmaps/x?fieldManager=m", "application/apply-patch+yaml"],
      ]) {
        const before = await m.storage.currentRevision();
        const r = await call(`http://127.0.0.1:${httpPort}`, method, path, {
          body: type === "application/yaml" ? body : "a: &a [*a]\n",
          headers: { "Content-Type": type },
        });
        assert.equal(r.status, 400, r.text);
        assert.match(String(r.json["message"]), /an anchor's value contains itself/);
        assert.equal(await m.storage.currentRevision(), before);
      }
    } finally {
      await gateway.close();
    }
  });
});

describe("YAML warnings", () => {
  it("a client's odd YAML emits no process warning", async () => {
    const { registry } = await startMemoryRegistry();
    const gateway = createGateway({ handlers: registry, log: silentLogger() });
    const { httpPort } = await gateway.listen({ host: "127.0.0.1", httpPort: 0 });
    const warnings: Error[] = [];
    const onWarning = (w: Error) => warnings.push(w);
    process.on("warning", onWarning);
    try {
      for (const [path, type] of [
        ["/api/v1/namespaces/default/configmaps", "application/yaml"],
        ["/api/v1/namespaces/default/configmaps/x?fieldManager=m", "application/apply-patch+yaml"],
      ]) {
        const method = type === "application/yaml" ? "POST" : "PATCH";
        const r = await call(`http://127.0.0.1:${httpPort}`, method, path, {
          body: "kind: ConfigMap\napiVersion: v1\nmetadata: {name: x}\ndata:\n  ? [a, b]\n  : c\n",
          headers: { "Content-Type": type },
        });
        assert.ok(r.status < 500, r.text);
      }
      await new Promise((r) => setImmediate(r));
      assert.deepEqual(
        warnings.map((w) => w.message),
        [],
      );
    } finally {
      process.off("warning", onWarning);
      await gateway.close();
    }
  });
});
