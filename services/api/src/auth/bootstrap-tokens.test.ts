// Bootstrap tokens over the real registry (MemoryStore): who a token is, what
// is refused (malformed, wrong secret, expired, not for authentication,
// another type), and the tokencleaner deleting only expired ones.
import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { fromKubeJson } from "@choreo/kit/kube-json";
import { silentLogger } from "@choreo/kit/log";
import { createRegistry } from "../registry/index.js";
import { MemoryStore } from "../storage/memory-store.js";
import { BootstrapTokenAuthenticator, generateBootstrapToken, parseBootstrapToken, registrySecretGetter, type BootstrapRefusal } from "./bootstrap-tokens.js";
import { TokenCleaner } from "./token-cleaner.js";

const T0 = Date.parse("2026-11-26T10:00:00Z");

async function setup() {
  const r = createRegistry({ store: new MemoryStore(), serviceCidr: "10.96.0.0/16", log: silentLogger() });
  await r.create({ object: fromKubeJson({ apiVersion: "v1", kind: "Namespace", metadata: { name: "kube-system" } }), dryRun: false });
  let now = T0;
  const refused: BootstrapRefusal[] = [];
  const authn = new BootstrapTokenAuthenticator(registrySecretGetter(r), { now: () => now, onRefused: (_id, why) => refused.push(why) });
  const put = async (id: string, secret: string, extra: Record<string, string> = {}, type = "bootstrap.kubernetes.io/token") =>
    r.create({
      object: fromKubeJson({
        apiVersion: "v1",
        kind: "Secret",
        metadata: { name: `bootstrap-token-${id}`, namespace: "kube-system" },
        type,
        stringData: { "token-id": id, "token-secret": secret, "usage-bootstrap-authentication": "true", ...extra },
      }),
      dryRun: false,
    });
  return { r, authn, put, refused, tick: (ms: number) => (now += ms), now: () => now };
}

describe("bootstrap tokens", () => {
  it("generates and parses the kubeadm format", () => {
    for (let i = 0; i < 50; i++) assert.match(generateBootstrapToken(), /^[a-z0-9]{6}\.[a-z0-9]{16}$/);
    assert.deepEqual(parseBootstrapToken("abcdef.0123456789abcdef"), { id: "abcdef", secret: "0123456789abcdef" });
    for (const bad of [
      "",
      "abcdef",
      "abcdef.",
      "ABCDEF.0123456789abcdef",
      "abcde.0123456789abcdef",
      "abcdef.0123456789abcdefx",
      "abcdef_0123456789abcdef",
      " abcdef.0123456789abcdef",
    ])
      assert.equal(parseBootstrapToken(bad), undefined, bad);
  });

  it("authenticates a good token as system:bootstrap:<id> in system:bootstrappers and its extra groups", async () => {
    const s = await setup();
    await s.put("abcdef", "0123456789abcdef", {
      expiration: new Date(T0 + 3_600_000).toISOString(),
      "auth-extra-groups": "system:bootstrappers:choreo:default-node-token,not-a-bootstrap-group",
    });
    const u = await s.authn.authenticateToken("abcdef.0123456789abcdef");
    assert.equal(u?.name, "system:bootstrap:abcdef");
    // A group outside system:bootstrappers: is never granted (a token Secret cannot make itself an admin).
    assert.deepEqual(u?.groups, ["system:bootstrappers", "system:bootstrappers:choreo:default-node-token", "system:authenticated"]);
  });

  it("refuses a wrong secret, an unknown id, a malformed token, another type, a token not for authentication", async () => {
    const s = await setup();
    await s.put("abcdef", "0123456789abcdef");
    await s.put("nouse1", "0123456789abcdef", { "usage-bootstrap-authentication": "false" });
    await s.put("opaque", "0123456789abcdef", {}, "Opaque");
    assert.equal(await s.authn.authenticateToken("abcdef.0123456789abcdee"), undefined);
    assert.equal(await s.authn.authenticateToken("zzzzzz.0123456789abcdef"), undefined);
    assert.equal(await s.authn.authenticateToken("nouse1.0123456789abcdef"), undefined);
    assert.equal(await s.authn.authenticateToken("opaque.0123456789abcdef"), undefined);
    assert.deepEqual(s.refused, ["wrong-secret", "no-secret", "not-for-authentication", "wrong-type"]);
    // Malformed: not this authenticator's, no lookup at all.
    assert.equal(await s.authn.authenticateToken("abcdef.0123456789ABCDEF"), undefined);
    assert.equal(await s.authn.authenticateToken("abcdef.0123456789abcdef.x"), undefined);
    assert.equal(s.refused.length, 4);
  });

  it("refuses a token once expired (and one with an unreadable expiration)", async () => {
    const s = await setup();
    await s.put("abcdef", "0123456789abcdef", { expiration: new Date(T0 + 60_000).toISOString() });
    await s.put("badexp", "0123456789abcdef", { expiration: "tomorrow" });
    assert.ok(await s.authn.authenticateToken("abcdef.0123456789abcdef"));
    s.tick(60_000);
    assert.equal(await s.authn.authenticateToken("abcdef.0123456789abcdef"), undefined);
    assert.equal(await s.authn.authenticateToken("badexp.0123456789abcdef"), undefined);
    assert.deepEqual(s.refused, ["expired", "expired"]);
  });

  it("the tokencleaner deletes expired bootstrap tokens only", async () => {
    const s = await setup();
    await s.put("old111", "0123456789abcdef", { expiration: new Date(T0 - 1).toISOString() });
    await s.put("new111", "0123456789abcdef", { expiration: new Date(T0 + 60_000).toISOString() });
    await s.put("ever11", "0123456789abcdef");
    await s.put("opaque", "0123456789abcdef", { expiration: new Date(T0 - 1).toISOString() }, "Opaque");
    const cleaner = new TokenCleaner({ handlers: s.r, log: silentLogger(), now: s.now });
    assert.deepEqual(await cleaner.sweep(), ["bootstrap-token-old111"]);
    s.tick(60_000);
    assert.deepEqual(await cleaner.sweep(), ["bootstrap-token-new111"]);
    const left = await s.r.list({ resource: "secrets", namespace: "kube-system", labelSelector: "", fieldSelector: "", limit: 0, continue: "" });
    assert.deepEqual(left.items.map((o) => (o.kind?.$case === "secret" ? o.kind.value.metadata?.name : "")).sort(), [
      "bootstrap-token-ever11",
      "bootstrap-token-opaque",
    ]);
  });
});
