import assert from "node:assert/strict";
import { generateKeyPairSync } from "node:crypto";
import { before, describe, it } from "node:test";
import { fromKubeJson, toKubeJson } from "@choreo/kit/kube-json";
import { serviceAccountBindingCheck } from "../../auth/binding-check.js";
import { ServiceAccountAuthenticator, ServiceAccountTokens } from "../../auth/service-account-tokens.js";
import { rejects } from "../../testing/api-assert.js";
import { startMemoryRegistry, type MemoryRegistry } from "../../testing/memory-registry.js";
import { MAX_EXPIRATION_SECONDS, requestToken } from "./tokenrequest.js";

// TokenRequest against the memory registry and a real signer: the token it
// answers authenticates as the ServiceAccount (bound to the pod when asked)
// with ServiceAccountAuthenticator, and bad requests change nothing.

const key = generateKeyPairSync("ec", { namedCurve: "prime256v1" }).privateKey;

describe("TokenRequest (serviceaccounts/NAME/token)", () => {
  let s: MemoryRegistry;
  const tokens = new ServiceAccountTokens({ key });
  let authn: ServiceAccountAuthenticator;
  let podUid = "";
  let saUid = "";
  before(async () => {
    s = await startMemoryRegistry();
    authn = new ServiceAccountAuthenticator(tokens, serviceAccountBindingCheck(s.registry), 0);
    const sa = toKubeJson(await s.client.create(fromKubeJson({ apiVersion: "v1", kind: "ServiceAccount", metadata: { name: "robot", namespace: "default" } })));
    saUid = String((sa["metadata"] as Record<string, unknown>)["uid"]);
    const pod = toKubeJson(
      await s.client.create(
        fromKubeJson({
          apiVersion: "v1",
          kind: "Pod",
          metadata: { name: "p", namespace: "default" },
          spec: { serviceAccountName: "robot", containers: [{ name: "c", image: "busybox" }] },
        }),
      ),
    );
    podUid = String((pod["metadata"] as Record<string, unknown>)["uid"]);
  });

  it("answers a token for the api's audiences, an hour by default, that authenticates as the account", async () => {
    const before = Date.now();
    const out = await requestToken(s.registry, tokens, "default", "robot", { apiVersion: "authentication.k8s.io/v1", kind: "TokenRequest", spec: {} });
    assert.equal(out["kind"], "TokenRequest");
    const status = out["status"] as { token: string; expirationTimestamp: string };
    const spec = out["spec"] as { audiences: string[]; expirationSeconds: number };
    assert.deepEqual(spec.audiences, tokens.apiAudiences);
    assert.equal(spec.expirationSeconds, 3600);
    const exp = Date.parse(status.expirationTimestamp);
    assert.ok(exp >= Math.floor(before / 1000) * 1000 + 3600_000 && exp <= Date.now() + 3601_000, status.expirationTimestamp);
    const user = await authn.authenticateToken(status.token);
    assert.equal(user?.name, "system:serviceaccount:default:robot");
    assert.equal(user?.uid, saUid);
    assert.ok(user?.groups.includes("system:serviceaccounts:default"));
  });

  it("binds the token to a pod: the pod's name and uid are in the user's extra, and the token dies with the pod", async () => {
    const p2 = toKubeJson(
      await s.client.create(
        fromKubeJson({
          apiVersion: "v1",
          kind: "Pod",
          metadata: { name: "p2", namespace: "default" },
          spec: { serviceAccountName: "robot", containers: [{ name: "c", image: "busybox" }] },
        }),
      ),
    );
    const uid = String((p2["metadata"] as Record<string, unknown>)["uid"]);
    const out = await requestToken(s.registry, tokens, "default", "robot", {
      spec: { audiences: ["x", ...tokens.apiAudiences], expirationSeconds: 7200, boundObjectRef: { kind: "Pod", apiVersion: "v1", name: "p2", uid } },
    });
    const token = (out["status"] as { token: string }).token;
    const user = await authn.authenticateToken(token);
    assert.deepEqual(user?.extra["authentication.kubernetes.io/pod-name"], ["p2"]);
    assert.deepEqual(user?.extra["authentication.kubernetes.io/pod-uid"], [uid]);
    assert.equal((out["spec"] as { expirationSeconds: number }).expirationSeconds, 7200);
    await s.client.delete("pods", "default", "p2", { gracePeriodSeconds: 0 });
    assert.equal(await authn.authenticateToken(token), undefined);
  });

  it("cuts a long lifetime to the maximum", async () => {
    const out = await requestToken(s.registry, tokens, "default", "robot", { spec: { expirationSeconds: 10 * 24 * 3600 } });
    assert.equal((out["spec"] as { expirationSeconds: number }).expirationSeconds, MAX_EXPIRATION_SECONDS);
  });

  it("refuses as Kubernetes: a missing account 404, under 10 minutes 422, a wrong uid 409, another kind or another account's pod 400", async () => {
    await rejects(requestToken(s.registry, tokens, "default", "ghost", {}), 404, "NotFound", /serviceaccounts "ghost" not found/);
    const e = await rejects(
      requestToken(s.registry, tokens, "default", "robot", { spec: { expirationSeconds: 60 } }),
      422,
      "Invalid",
      /TokenRequest.authentication.k8s.io "" is invalid: spec.expirationSeconds: Invalid value: 60: may not specify a duration less than 10 minutes/,
    );
    assert.equal(e.status.details?.causes[0]?.field, "spec.expirationSeconds");
    await rejects(
      requestToken(s.registry, tokens, "default", "robot", { spec: { boundObjectRef: { kind: "Pod", apiVersion: "v1", name: "p", uid: "nope" } } }),
      409,
      "Conflict",
      /does not match the UID in record/,
    );
    await rejects(
      requestToken(s.registry, tokens, "default", "robot", { spec: { boundObjectRef: { kind: "Pod", apiVersion: "v1", name: "none" } } }),
      404,
      "NotFound",
    );
    await rejects(
      requestToken(s.registry, tokens, "default", "robot", { spec: { boundObjectRef: { kind: "ConfigMap", apiVersion: "v1", name: "x" } } }),
      400,
      "BadRequest",
      /cannot bind token for serviceaccount "robot" to object of kind "ConfigMap"/,
    );
    // (the replication actor gives every namespace its default account; here, by hand)
    await s.client.create(fromKubeJson({ apiVersion: "v1", kind: "ServiceAccount", metadata: { name: "default", namespace: "default" } }));
    await rejects(
      requestToken(s.registry, tokens, "default", "default", { spec: { boundObjectRef: { kind: "Pod", apiVersion: "v1", name: "p", uid: podUid } } }),
      400,
      "BadRequest",
      /different serviceaccount/,
    );
    await rejects(requestToken(s.registry, tokens, "default", "robot", { spec: { audiences: "x" } }), 400, "BadRequest");
    await rejects(requestToken(s.registry, tokens, "default", "robot", { kind: "Pod" }), 400, "BadRequest");
    await rejects(requestToken(s.registry, tokens, "default", "robot", []), 400, "BadRequest");
  });
});
