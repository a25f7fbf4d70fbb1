import assert from "node:assert/strict";
import { before, describe, it } from "node:test";
import { unwrap } from "@choreo/kit";
import type { ConfigMap } from "@choreo/kit/gen/choreo/core/v1/core";
import { fromKubeJson, toKubeJson } from "@choreo/kit/kube-json";
import { rejects } from "../../testing/api-assert.js";
import { startMemoryRegistry, type MemoryRegistry } from "../../testing/memory-registry.js";
import { validateConfigMapKey } from "./strategy.js";

const cm = (name: string, body: Record<string, unknown>) =>
  fromKubeJson({ apiVersion: "v1", kind: "ConfigMap", metadata: { name, namespace: "default" }, ...body });

describe("configmaps", () => {
  // On the in-memory storage: validation is the strategy's, no server needed.
  let s: MemoryRegistry;
  before(async () => {
    s = await startMemoryRegistry();
  });

  it("stores data and binaryData at the top level and gives them back as Kubernetes JSON (binaryData base64)", async () => {
    await s.client.create(cm("game", { data: { "game.properties": "lives=3\n", "ui.mode": "dark" }, binaryData: { "logo.bin": "AAEC/w==" } }));
    const got = toKubeJson(await s.client.get("configmaps", "default", "game"));
    assert.deepEqual(got["data"], { "game.properties": "lives=3\n", "ui.mode": "dark" });
    assert.deepEqual(got["binaryData"], { "logo.bin": "AAEC/w==" });
    assert.equal(got["spec"], undefined);
    assert.equal(got["immutable"], undefined);
    assert.deepEqual([...((unwrap(await s.client.get("configmaps", "default", "game")) as ConfigMap).binaryData["logo.bin"] ?? [])], [0, 1, 2, 255]);
  });

  it("refuses bad keys, a key in both maps and more than 1 MiB, with Kubernetes' paths and messages", async () => {
    await rejects(
      s.client.create(cm("bad-key", { data: { "a b": "x" } })),
      422,
      "Invalid",
      /^ConfigMap "bad-key" is invalid: data\[a b\]: Invalid value: "a b": a valid config key must consist of alphanumeric characters, '-', '_' or '\.' \(e\.g\. 'key\.name', {2}or 'KEY_NAME', {2}or 'key-name', regex used for validation is '\[-\._a-zA-Z0-9\]\+'\)$/,
    );
    await rejects(s.client.create(cm("dot", { binaryData: { "..": "" } })), 422, "Invalid", /binaryData\[\.\.\]: Invalid value: "\.\.": must not be '\.\.'/);
    await rejects(
      s.client.create(cm("both", { data: { k: "v" }, binaryData: { k: "dg==" } })),
      422,
      "Invalid",
      /data\[k\]: Invalid value: "k": duplicate of key present in binaryData/,
    );
    const big = "x".repeat(512 * 1024);
    await rejects(
      s.client.create(cm("big", { data: { a: big, b: big, c: "x" } })),
      422,
      "Invalid",
      /^ConfigMap "big" is invalid: \[\]: Too long: must have at most 1048576 bytes$/,
    );
    await s.client.create(cm("exactly-1mib", { data: { a: big, b: big } }));
    assert.deepEqual(validateConfigMapKey("x".repeat(254)), ["must be no more than 253 characters"]);
    assert.deepEqual(validateConfigMapKey("..data"), ["must not start with '..'"]);
    assert.deepEqual(validateConfigMapKey(".env"), []);
  });

  it("refuses binaryData that is not base64 with 400", () => {
    assert.throws(() => cm("b64", { binaryData: { k: "not base64!" } }), /illegal base64 data at input byte 3/);
  });

  it("once immutable, refuses changing data or binaryData and unsetting immutable; metadata may still change", async () => {
    await s.client.create(cm("frozen", { data: { k: "v" }, binaryData: { b: "AQ==" }, immutable: true }));
    const cur = toKubeJson(await s.client.get("configmaps", "default", "frozen"));
    assert.equal(cur["immutable"], true);
    const edited = (body: Record<string, unknown>) => fromKubeJson({ ...cur, ...body });
    await rejects(
      s.client.update(edited({ data: { k: "w" } })),
      422,
      "Invalid",
      /^ConfigMap "frozen" is invalid: data: Forbidden: field is immutable when `immutable` is set$/,
    );
    await rejects(s.client.update(edited({ binaryData: { b: "Ag==" } })), 422, "Invalid", /binaryData: Forbidden: field is immutable when `immutable` is set/);
    await rejects(s.client.update(edited({ immutable: false })), 422, "Invalid", /immutable: Forbidden: field is immutable when `immutable` is set/);
    await rejects(
      s.client.patch("configmaps", "default", "frozen", "application/merge-patch+json", { immutable: null }),
      422,
      "Invalid",
      /immutable: Forbidden/,
    );
    const labelled = await s.client.update(edited({ metadata: { ...(cur["metadata"] as object), labels: { team: "a" } } }));
    assert.deepEqual(unwrap(labelled).metadata?.labels, { team: "a" });
    await s.client.delete("configmaps", "default", "frozen");
    await rejects(s.client.get("configmaps", "default", "frozen"), 404, "NotFound");
  });

  it("a mutable configmap may change, and may become immutable", async () => {
    await s.client.create(cm("live", { data: { k: "v" } }));
    const cur = toKubeJson(await s.client.get("configmaps", "default", "live"));
    const next = toKubeJson(await s.client.update(fromKubeJson({ ...cur, data: { k: "w" }, immutable: true })));
    assert.deepEqual(next["data"], { k: "w" });
    assert.equal(next["immutable"], true);
  });
});
