// test-tier: servers
// Secrets encrypted at rest by the real api process: the keys file it makes at
// its first start (0600, one key), nothing readable in Redis or in its debug
// log, and key rotation across restarts — a new first key with the old one
// second reads old Secrets and seals new ones under the new key; without the
// old key, its Secrets alone answer 500 and the api keeps serving.
import assert from "node:assert/strict";
import { readFileSync, statSync, writeFileSync } from "node:fs";
import path from "node:path";
import { randomBytes } from "node:crypto";
import { after, before, describe, it } from "node:test";
import { Redis } from "ioredis";
import { fromKubeJson } from "@choreo/kit/kube-json";
import { startCluster, withLogsOnFailure, type TestCluster } from "./support/cluster.js";

const VALUE = "it-secret-value-0c5e2a";
const KEY_NAME = "it-key-name-77d1";
type Json = Record<string, unknown>;

describe("secrets encrypted at rest by the api process", () => {
  let c: TestCluster;
  let redis: Redis;
  let keysFile: string;

  before(async () => {
    c = await startCluster({ env: { CHOREO_LOG_LEVEL: "debug" } });
    redis = new Redis(c.redis.url);
    keysFile = path.join(c.dir, "api", "encryption", "keys");
  });
  after(async () => {
    redis.disconnect();
    await c.stop();
  });

  const get = async (name: string): Promise<{ status: number; body: Json }> => {
    const res = await fetch(`${c.httpUrl}/api/v1/namespaces/default/secrets/${name}`, { headers: { authorization: `Bearer ${c.token}` } });
    return { status: res.status, body: (await res.json()) as Json };
  };
  const create = (name: string) =>
    c.client.create(fromKubeJson({ apiVersion: "v1", kind: "Secret", metadata: { name, namespace: "default" }, stringData: { [KEY_NAME]: VALUE } }));
  const stored = async (name: string): Promise<Buffer> => (await redis.hgetBuffer(`{choreo}:o:secrets:default/${name}`, "v")) ?? Buffer.alloc(0);
  const restartWithKeys = async (text: string): Promise<void> => {
    await c.killApi(0);
    writeFileSync(keysFile, text, { mode: 0o600 });
    await c.startApi(0);
  };
  const b64 = Buffer.from(VALUE).toString("base64");

  it("makes its keys file at first start and stores nothing readable", async () => {
    await withLogsOnFailure(c, async () => {
      assert.equal(statSync(keysFile).mode & 0o777, 0o600);
      const lines = readFileSync(keysFile, "utf8")
        .split("\n")
        .filter((l) => l && !l.startsWith("#"));
      assert.equal(lines.length, 1);
      assert.match(lines[0] ?? "", /^key1:[A-Za-z0-9+/]{43}=$/);
      await create("first");
      assert.deepEqual((await get("first")).body["data"], { [KEY_NAME]: b64 });
      const bytes = await stored("first");
      assert.ok(bytes.includes("k8s:enc:aesgcm:v1:key1:"));
      for (const k of await redis.keys("*")) assert.equal(k.includes(KEY_NAME), false, k);
      for (const plain of [VALUE, KEY_NAME, b64]) {
        assert.equal(bytes.includes(plain), false, plain);
        assert.equal(readFileSync(path.join(c.dir, "api-0.log"), "utf8").includes(plain), false, `the api's log holds ${plain}`);
      }
    });
  });

  it("rotates: a new first key seals new writes, the old one still opens old secrets; without it, only those answer 500", async () => {
    await withLogsOnFailure(c, async () => {
      const key1 = readFileSync(keysFile, "utf8");
      const key2 = `key2:${randomBytes(32).toString("base64")}\n`;
      await restartWithKeys(`${key2}${key1}`);
      assert.deepEqual((await get("first")).body["data"], { [KEY_NAME]: b64 });
      await create("second");
      assert.ok((await stored("second")).includes("k8s:enc:aesgcm:v1:key2:"));
      assert.ok((await stored("first")).includes("k8s:enc:aesgcm:v1:key1:"));

      await restartWithKeys(key2);
      const broken = await get("first");
      assert.equal(broken.status, 500);
      assert.equal(broken.body["reason"], "InternalError");
      assert.match(String(broken.body["message"]), /secrets\/default\/first is encrypted with key "key1"/);
      const fine = await get("second");
      assert.equal(fine.status, 200);
      assert.deepEqual(fine.body["data"], { [KEY_NAME]: b64 });
      // Still serving: the api did not crash on the secret it cannot open.
      const ns = await fetch(`${c.httpUrl}/api/v1/namespaces/default`, { headers: { authorization: `Bearer ${c.token}` } });
      assert.equal(ns.status, 200);
      await ns.arrayBuffer();
      assert.equal(readFileSync(path.join(c.dir, "api-0.log"), "utf8").includes(VALUE), false);
      // The metric names the key no longer held, and the one in use.
      const metrics = await (await fetch(`http://127.0.0.1:${c.apis[0]?.metricsPort}/metrics`)).text();
      const counted = (key: string, status: string): boolean =>
        metrics
          .split("\n")
          .some(
            (l) =>
              l.startsWith("choreo_api_secret_transformations_total{") &&
              l.includes('operation="unseal"') &&
              l.includes(`key="${key}"`) &&
              l.includes(`status="${status}"`) &&
              Number(l.split(" ").at(-1)) > 0,
          );
      assert.ok(
        counted("key1", "error"),
        metrics
          .split("\n")
          .filter((l) => l.includes("secret"))
          .join("\n"),
      );
      assert.ok(counted("key2", "ok"));
    });
  });
});
