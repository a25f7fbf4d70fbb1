import assert from "node:assert/strict";
import { generateKeyPairSync } from "node:crypto";
import { mkdtempSync, rmSync, statSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { describe, it } from "node:test";
import { ensureServiceAccountKey, ServiceAccountAuthenticator, ServiceAccountTokens, type TokenBinding } from "./service-account-tokens.js";

const binding: TokenBinding = { namespace: "dev", serviceAccount: { name: "robot", uid: "sa-1" }, pod: { name: "web", uid: "pod-1" } };

describe("ServiceAccount tokens", () => {
  const key = generateKeyPairSync("ec", { namedCurve: "prime256v1" }).privateKey;
  let clock = Date.UTC(2026, 10, 26);
  const tokens = new ServiceAccountTokens({ key, now: () => clock });

  it("keeps its signing key in pki/service-account.key, 0600, made once", () => {
    const dir = mkdtempSync(path.join(tmpdir(), "choreo-sa-key-"));
    try {
      const a = ensureServiceAccountKey(path.join(dir, "pki"));
      assert.equal(statSync(path.join(dir, "pki", "service-account.key")).mode & 0o777, 0o600);
      const b = ensureServiceAccountKey(path.join(dir, "pki"));
      assert.deepEqual(a.export({ format: "jwk" }), b.export({ format: "jwk" }));
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it("issues a JWT Kubernetes clients can read, and verifies only its own, unexpired, for its audience", () => {
    const { token, claims } = tokens.issue(binding, [], 3600);
    const [head, body] = token.split(".");
    assert.deepEqual(JSON.parse(Buffer.from(head!, "base64url").toString()), { alg: "ES256", kid: JSON.parse(Buffer.from(head!, "base64url").toString()).kid });
    assert.equal(JSON.parse(Buffer.from(body!, "base64url").toString()).sub, "system:serviceaccount:dev:robot");
    assert.deepEqual(claims.aud, ["https://kubernetes.default.svc.cluster.local"]);
    assert.equal(claims.exp - claims.iat, 3600);
    assert.deepEqual(tokens.verify(token)?.["kubernetes.io"], {
      namespace: "dev",
      serviceaccount: { name: "robot", uid: "sa-1" },
      pod: { name: "web", uid: "pod-1" },
    });

    const vault = tokens.issue(binding, ["vault"], 600).token;
    assert.equal(tokens.verify(vault), undefined, "another audience is no credential for the api");
    assert.ok(tokens.verify(vault, ["vault"]), "but a TokenReview for that audience accepts it");

    const other = new ServiceAccountTokens({ key: generateKeyPairSync("ec", { namedCurve: "prime256v1" }).privateKey, now: () => clock });
    assert.equal(tokens.verify(other.issue(binding, [], 3600).token), undefined, "another key");
    const [h, b, s] = token.split(".");
    const forged = Buffer.from(JSON.stringify({ ...claims, sub: "system:serviceaccount:kube-system:admin" })).toString("base64url");
    assert.equal(tokens.verify(`${h}.${forged}.${s}`), undefined, "a changed body");
    assert.equal(tokens.verify(`${h}.${b}`), undefined);
    assert.equal(tokens.verify("not-a-jwt"), undefined);
    const none = Buffer.from(JSON.stringify({ alg: "none" })).toString("base64url");
    assert.equal(tokens.verify(`${none}.${b}.`), undefined, "alg none");

    clock += 3600_000 + 61_000;
    assert.equal(tokens.verify(token), undefined, "expired (past the 60 s leeway)");
  });

  it("authenticates a token only while its ServiceAccount and pod exist with the uids it was bound to", async () => {
    let alive = true;
    const checked: TokenBinding[] = [];
    const authn = new ServiceAccountAuthenticator(
      tokens,
      async (b) => {
        checked.push(b);
        return alive;
      },
      0,
    );
    const { token } = tokens.issue(binding, [], 3600);
    const user = await authn.authenticateToken(token);
    assert.deepEqual(user, {
      name: "system:serviceaccount:dev:robot",
      uid: "sa-1",
      groups: ["system:serviceaccounts", "system:serviceaccounts:dev", "system:authenticated"],
      extra: {
        "authentication.kubernetes.io/credential-id": [user!.extra["authentication.kubernetes.io/credential-id"]![0]!],
        "authentication.kubernetes.io/pod-name": ["web"],
        "authentication.kubernetes.io/pod-uid": ["pod-1"],
      },
    });
    assert.deepEqual(checked.at(-1), binding);
    alive = false;
    assert.equal(await authn.authenticateToken(token), undefined, "the pod or account is gone");
    assert.equal(await authn.authenticateToken("static-token"), undefined);
  });
});
