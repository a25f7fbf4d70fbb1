import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { ApiError, failure } from "@choreo/kit";
import type { TokenRequestJson } from "@choreo/kit/client";
import { Pod } from "@choreo/kit/gen/choreo/core/v1/core";
import { DEFAULT_EXPIRATION_SECONDS, PodTokens, requiresRefresh } from "./pod-tokens.js";
import { volumePayload, type Lookup } from "./resolve.js";

// The refresh schedule of pods' projected tokens on a fake clock, against a
// fake api that numbers the tokens it issues (pure logic under test).

const pod = (uid = "u1"): Pod =>
  Pod.fromPartial({ metadata: { name: "p", namespace: "apps", uid }, spec: { serviceAccountName: "robot", containers: [{ name: "c", image: "i" }] } });

function fakeApi(clock: { now: number }) {
  const asked: { namespace: string; sa: string; req: TokenRequestJson }[] = [];
  let down = false;
  const request = (namespace: string, sa: string, req: TokenRequestJson): Promise<TokenRequestJson> => {
    if (down) return Promise.reject(new ApiError(failure(503, "ServiceUnavailable", "the api service is not reachable (no responders)")));
    asked.push({ namespace, sa, req });
    const seconds = req.spec.expirationSeconds ?? 3600;
    return Promise.resolve({
      ...req,
      spec: { ...req.spec, expirationSeconds: seconds },
      status: { token: `token-${asked.length}`, expirationTimestamp: new Date(clock.now + seconds * 1000).toISOString() },
    });
  };
  return { asked, request, setDown: (d: boolean) => (down = d) };
}

describe("pod tokens: the kubelet's token manager", () => {
  it("asks once for a token bound to the pod, 3607 s and the api's audience by default, and keeps it until 80 % of its life", async () => {
    const clock = { now: Date.parse("2026-11-26T10:00:00Z") };
    const api = fakeApi(clock);
    const tokens = new PodTokens(api.request, { now: () => clock.now });
    assert.equal(await tokens.token(pod(), { audience: "", expirationSeconds: undefined }), "token-1");
    assert.deepEqual(api.asked[0], {
      namespace: "apps",
      sa: "robot",
      req: {
        apiVersion: "authentication.k8s.io/v1",
        kind: "TokenRequest",
        spec: { expirationSeconds: DEFAULT_EXPIRATION_SECONDS, boundObjectRef: { kind: "Pod", apiVersion: "v1", name: "p", uid: "u1" } },
      },
    });
    clock.now += 0.79 * DEFAULT_EXPIRATION_SECONDS * 1000;
    assert.equal(await tokens.token(pod(), { audience: "", expirationSeconds: undefined }), "token-1");
    assert.equal(api.asked.length, 1);
    clock.now += 0.02 * DEFAULT_EXPIRATION_SECONDS * 1000;
    assert.equal(await tokens.token(pod(), { audience: "", expirationSeconds: undefined }), "token-2");
    assert.equal(api.asked.length, 2);
  });

  it("refreshes a long-lived token after 24 h, before 80 % of 48 h", async () => {
    const clock = { now: 0 };
    const api = fakeApi(clock);
    const tokens = new PodTokens(api.request, { now: () => clock.now });
    const src = { audience: "vault", expirationSeconds: 48 * 3600 };
    assert.equal(await tokens.token(pod(), src), "token-1");
    assert.deepEqual(api.asked[0]!.req.spec.audiences, ["vault"]);
    clock.now += 24 * 3600_000 - 1;
    assert.equal(await tokens.token(pod(), src), "token-1");
    clock.now += 1;
    assert.equal(await tokens.token(pod(), src), "token-2");
    assert.ok(requiresRefresh({ token: "", issuedAt: 0, expiresAt: 48 * 3600_000 }, 24 * 3600_000));
    assert.ok(!requiresRefresh({ token: "", issuedAt: 0, expiresAt: 1000_000 }, 799_999));
  });

  it("keeps a valid token when the api cannot be reached, asks again only after a growing backoff, and fails once the token has expired", async () => {
    const clock = { now: 0 };
    const api = fakeApi(clock);
    const tokens = new PodTokens(api.request, { now: () => clock.now });
    const src = { audience: "", expirationSeconds: 600 };
    await tokens.token(pod(), src);
    clock.now = 481_000; // past 80 % of 600 s
    api.setDown(true);
    assert.equal(await tokens.token(pod(), src), "token-1");
    api.setDown(false);
    // Within the first backoff (1 s): the held token, nothing asked.
    clock.now += 500;
    assert.equal(await tokens.token(pod(), src), "token-1");
    assert.equal(api.asked.length, 1);
    clock.now += 600;
    assert.equal(await tokens.token(pod(), src), "token-2");
    // Down past the token's expiry: the failure is the caller's (the volume is not rewritten).
    api.setDown(true);
    clock.now += 601_000;
    await assert.rejects(tokens.token(pod(), src), /not reachable/);
  });

  it("keeps one token per pod, account, audience and lifetime; forgets a stopped pod's", async () => {
    const clock = { now: 0 };
    const api = fakeApi(clock);
    const tokens = new PodTokens(api.request, { now: () => clock.now });
    await tokens.token(pod("a"), { audience: "", expirationSeconds: 600 });
    await tokens.token(pod("a"), { audience: "x", expirationSeconds: 600 });
    await tokens.token(pod("b"), { audience: "", expirationSeconds: 600 });
    assert.equal(tokens.size, 3);
    tokens.forget("a");
    assert.equal(tokens.size, 1);
  });

  it("writes the token at the projection's path with the projected volume's mode; a refusal is the kubelet's FailedMount message", async () => {
    const base: Lookup = { configMap: () => Promise.resolve(undefined), secret: () => Promise.resolve(undefined) };
    const v = {
      name: "kube-api-access",
      projected: { defaultMode: 0o644, sources: [{ serviceAccountToken: { audience: "", expirationSeconds: 3607, path: "token" } }] },
    };
    const l: Lookup = { ...base, serviceAccountToken: () => Promise.resolve("the-token") };
    const out = await volumePayload(pod(), v, l, { cpu: "1", memory: "1Gi" });
    assert.equal(new TextDecoder().decode(out.get("token")!.data), "the-token");
    assert.equal(out.get("token")!.mode, 0o644);
    const refused: Lookup = { ...base, serviceAccountToken: () => Promise.reject(new Error('serviceaccounts "robot" not found')) };
    await assert.rejects(volumePayload(pod(), v, refused, { cpu: "1", memory: "1Gi" }), /failed to fetch token: serviceaccounts "robot" not found/);
  });
});
