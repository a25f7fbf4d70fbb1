import assert from "node:assert/strict";
import { mkdtempSync, readFileSync, rmSync, statSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { describe, it } from "node:test";
import { ensureEventKeys, loadEventSigner, loadEventVerifier } from "./signing.js";

describe("event signing keys", () => {
  it("makes a key pair once (private 0600, public 0644) and signatures verify only for the same bytes", () => {
    const dir = mkdtempSync(path.join(os.tmpdir(), "choreo-keys-"));
    try {
      const k = ensureEventKeys(path.join(dir, "pki"));
      assert.equal(statSync(k.privateKey).mode & 0o777, 0o600);
      assert.equal(statSync(k.publicKey).mode & 0o777, 0o644);
      const again = ensureEventKeys(path.join(dir, "pki"));
      assert.equal(readFileSync(again.privateKey, "utf8"), readFileSync(k.privateKey, "utf8"), "a second start keeps the key");
      const signer = loadEventSigner(k.privateKey);
      const verifier = loadEventVerifier(k.publicKey);
      const data = Buffer.from("a pod event");
      const sig = signer.sign(data);
      assert.ok(verifier.verify(data, sig));
      assert.ok(!verifier.verify(Buffer.from("a pod event!"), sig), "other bytes");
      assert.ok(!verifier.verify(data, undefined), "no signature");
      assert.ok(!verifier.verify(data, "not base64 at all %%%"), "garbage");
      assert.ok(!verifier.verify(data, "A".repeat(10_000)), "oversized");
      assert.ok(loadEventVerifier(readFileSync(k.publicKey, "utf8")).verify(data, sig), "the PEM text itself works too");
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
