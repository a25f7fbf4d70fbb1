// SelfSubjectReview and TokenReview as pure functions: the caller's identity
// as authentication/v1 UserInfo, and a token's through an injected reviewer.
import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { ApiError } from "@choreo/kit";
import type { UserInfo } from "../../auth/types.js";
import { selfSubjectReview, tokenReview } from "./identity.js";
import type { TokenReviewer } from "./types.js";

const alice: UserInfo = { name: "alice", uid: "u1", groups: ["dev", "system:authenticated"], extra: { "authentication.kubernetes.io/pod-name": ["p"] } };

/** Knows one token, for the audience `api` only; throws for "broken". */
class Tokens implements TokenReviewer {
  asked: (readonly string[] | undefined)[] = [];
  authenticateToken(token: string, audiences?: readonly string[]): UserInfo | undefined {
    this.asked.push(audiences);
    if (token === "broken") throw new Error("token store unreachable");
    return token === "good" && (audiences ?? ["api"]).includes("api") ? alice : undefined;
  }
}

describe("SelfSubjectReview", () => {
  it("answers the caller's name, uid, groups and extra", () => {
    const out = selfSubjectReview(alice, { apiVersion: "authentication.k8s.io/v1", kind: "SelfSubjectReview", metadata: { creationTimestamp: null } });
    assert.equal(out["kind"], "SelfSubjectReview");
    assert.deepEqual(out["status"], {
      userInfo: { username: "alice", uid: "u1", groups: ["dev", "system:authenticated"], extra: { "authentication.kubernetes.io/pod-name": ["p"] } },
    });
    assert.match(String((out["metadata"] as Record<string, unknown>)["creationTimestamp"]), /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}Z$/);
  });

  it("leaves out what is empty", () => {
    assert.deepEqual(selfSubjectReview({ name: "system:anonymous", uid: "", groups: [], extra: {} }, {})["status"], {
      userInfo: { username: "system:anonymous" },
    });
  });
});

describe("TokenReview", () => {
  const review = (spec: Record<string, unknown>) => ({ apiVersion: "authentication.k8s.io/v1", kind: "TokenReview", spec });

  it("a known token is authenticated with its user, for the api's audiences by default", async () => {
    const t = new Tokens();
    const out = await tokenReview(t, ["api"], review({ token: "good" }));
    assert.deepEqual(out["status"], {
      authenticated: true,
      user: { username: "alice", uid: "u1", groups: ["dev", "system:authenticated"], extra: { "authentication.kubernetes.io/pod-name": ["p"] } },
      audiences: ["api"],
    });
    assert.deepEqual(t.asked, [["api"]]);
  });

  it("spec.audiences are passed on; a token for none of them proves nobody", async () => {
    const t = new Tokens();
    assert.deepEqual((await tokenReview(t, ["api"], review({ token: "good", audiences: ["vault"] })))["status"], { user: {} });
    assert.deepEqual(t.asked, [["vault"]]);
  });

  it("an unknown token, a reviewer that throws, no reviewer, and an async reviewer", async () => {
    assert.deepEqual((await tokenReview(new Tokens(), [], review({ token: "nope" })))["status"], { user: {} });
    assert.deepEqual((await tokenReview(new Tokens(), [], review({ token: "broken" })))["status"], { user: {}, error: "token store unreachable" });
    assert.deepEqual((await tokenReview(undefined, [], review({ token: "good" })))["status"], { user: {} });
    const later: TokenReviewer = { authenticateToken: (t) => Promise.resolve(t === "good" ? alice : undefined) };
    assert.equal(((await tokenReview(later, [], review({ token: "good" })))["status"] as Record<string, unknown>)["authenticated"], true);
  });

  it("400 without a token", async () => {
    await assert.rejects(
      tokenReview(new Tokens(), [], review({})),
      (err: unknown) => err instanceof ApiError && err.status.code === 400 && err.status.message === "token is required for TokenReview in authentication",
    );
  });
});
