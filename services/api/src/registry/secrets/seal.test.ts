import assert from "node:assert/strict";
import { randomBytes } from "node:crypto";
import { mkdtempSync, readFileSync, rmSync, statSync, writeFileSync, chmodSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { describe, it } from "node:test";
import { ApiError, emptyMeta } from "@choreo/kit";
import { Object as ObjectMsg } from "@choreo/kit/gen/choreo/api/v1/api";
import { Secret } from "@choreo/kit/gen/choreo/core/v1/core";
import { fromKubeJson, toKubeJson } from "@choreo/kit/kube-json";
import { startMemoryRegistry } from "../../testing/memory-registry.js";
import { ensureEncryptionKeys, parseEncryptionKeys } from "./keys.js";
import { SEAL_PREFIX, SecretSealer, isSealed } from "./seal.js";

const key = (name: string) => ({ name, secret: randomBytes(32) });

function secret(name: string): Secret {
  return Secret.fromPartial({
    apiVersion: "v1",
    kind: "Secret",
    metadata: {
      ...emptyMeta(),
      name,
      namespace: "default",
      labels: { app: "db" },
      annotations: { "kubectl.kubernetes.io/last-applied-configuration": '{"stringData":{"password":"hunter2"}}' },
    },
    type: "Opaque",
    data: { password: Buffer.from("hunter2") },
  });
}

const has = (bytes: Uint8Array, text: string): boolean => Buffer.from(bytes).includes(text);

function is500(err: unknown, message: RegExp): boolean {
  assert.ok(err instanceof ApiError);
  assert.equal(err.status.code, 500);
  assert.equal(err.status.reason, "InternalError");
  assert.match(err.status.message, message);
  return true;
}

describe("secret sealing", () => {
  it("seals the whole secret (data, its key names, annotations) under the first key and opens it again", () => {
    const sealer = new SecretSealer([key("new"), key("old")]);
    const s = secret("db");
    const sealed = sealer.seal(s);
    assert.ok(isSealed(sealed));
    const bytes = Secret.encode(sealed).finish();
    for (const plain of ["hunter2", "password", "last-applied"]) assert.equal(has(bytes, plain), false, plain);
    // What selection and the garbage collector read stays.
    assert.deepEqual(sealed.metadata?.labels, { app: "db" });
    assert.equal(sealed.type, "Opaque");
    const value = Object.values(sealed.data)[0] ?? new Uint8Array();
    assert.ok(Buffer.from(value).toString("latin1").startsWith(`${SEAL_PREFIX}new:`));
    // A fresh nonce each time.
    assert.notDeepEqual(Buffer.from(Object.values(sealer.seal(s).data)[0] ?? []), Buffer.from(value));
    assert.deepEqual(sealer.unseal(sealed), s);
    // The original is left as it was.
    assert.equal(Buffer.from(s.data["password"] ?? []).toString(), "hunter2");
  });

  it("every key opens what it sealed; a missing or wrong key is a 500 InternalError naming the secret", () => {
    const old = key("old");
    const sealedOld = new SecretSealer([old]).seal(secret("a"));
    const seen: string[] = [];
    const rotated = new SecretSealer([key("new"), old], (op, name, ok) => seen.push(`${op} ${name} ${ok}`));
    assert.equal(Buffer.from(rotated.unseal(sealedOld).data["password"] ?? []).toString(), "hunter2");
    rotated.seal(secret("b"));
    assert.throws(() => rotated.unseal({ ...sealedOld, metadata: { ...emptyMeta(), name: "c", namespace: "default" } }));
    // What the metric counts: the key each transformation used, and whether it worked.
    assert.deepEqual(seen, ["unseal old true", "seal new true", "unseal old false"]);
    assert.throws(
      () => new SecretSealer([key("new")]).unseal(sealedOld),
      (err) => is500(err, /^Internal error occurred: secrets\/default\/a is encrypted with key "old", which is not among/),
    );
    assert.throws(
      () => new SecretSealer([key("old")]).unseal(sealedOld),
      (err) => is500(err, /secrets\/default\/a does not decrypt with key "old"/),
    );
    // A sealed value moved under another name does not open (the name is authenticated).
    const moved = { ...sealedOld, metadata: { ...emptyMeta(), name: "b", namespace: "default" } };
    assert.throws(
      () => new SecretSealer([old]).unseal(moved),
      (err) => is500(err, /secrets\/default\/b does not decrypt/),
    );
    // A secret stored before encryption reads as it is.
    const plain = secret("p");
    assert.deepEqual(rotated.unseal(plain), plain);
  });

  it("keys file: made once 0600 with one key, read back, bad lines refused", () => {
    const dir = mkdtempSync(path.join(os.tmpdir(), "choreo-keys-"));
    try {
      const file = path.join(dir, "encryption", "keys");
      const made = ensureEncryptionKeys(file);
      assert.equal(made.length, 1);
      assert.equal(made[0]?.secret.length, 32);
      assert.equal(statSync(file).mode & 0o777, 0o600);
      assert.deepEqual(ensureEncryptionKeys(file), made);
      const text = readFileSync(file, "utf8");
      writeFileSync(file, `key2:${randomBytes(32).toString("base64")}\n${text}`);
      assert.deepEqual(
        ensureEncryptionKeys(file).map((k) => k.name),
        ["key2", "key1"],
      );
      chmodSync(file, 0o644);
      assert.throws(() => ensureEncryptionKeys(file), /readable by others/);
      assert.throws(() => parseEncryptionKeys("k:c2hvcnQ=\n", "f"), /f:1: key "k" must be 32 bytes/);
      assert.throws(() => parseEncryptionKeys("# nothing\n", "f"), /f: no key/);
      assert.throws(() => parseEncryptionKeys(`a b:${randomBytes(32).toString("base64")}`, "f"), /f:1: expected <name>:<base64 key>/);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it("the registry stores sealed secrets and gives clients the plaintext", async () => {
    const s = await startMemoryRegistry();
    await s.client.create(
      fromKubeJson({ apiVersion: "v1", kind: "Secret", metadata: { name: "db", namespace: "default" }, stringData: { password: "hunter2" } }),
    );
    const stored = await s.storage.get("secrets", "default", "db");
    assert.ok(stored);
    assert.equal(has(stored.bytes, "hunter2"), false);
    assert.equal(has(stored.bytes, "password"), false);
    const inner = ObjectMsg.decode(stored.bytes).kind?.value as Secret;
    assert.ok(isSealed(inner));
    assert.deepEqual(toKubeJson(await s.client.get("secrets", "default", "db"))["data"], { password: Buffer.from("hunter2").toString("base64") });
    const listed = (await s.client.list("secrets", { namespace: "default" })).items.map((o) => toKubeJson(o)["data"]);
    assert.deepEqual(listed, [{ password: Buffer.from("hunter2").toString("base64") }]);
  });
});
