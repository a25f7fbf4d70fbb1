// The RBAC authorizer's rules as SelfSubjectRulesReview lists them.
import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { RbacAuthorizer } from "../../auth/rbac/authorizer.js";
import { clusterRole, clusterRoleBinding, policyRule, role, roleBinding, StaticSource, user, userSubject } from "../../auth/rbac/testing.js";
import { selfSubjectRulesReview } from "./access.js";
import { rbacRules } from "./rbac-rules.js";

describe("rbacRules", () => {
  it("lists a user's RBAC rules in the namespace, nonResourceURLs named as authorization/v1, a missing role as evaluationError", async () => {
    const rbac = new RbacAuthorizer(
      new StaticSource(
        [role("dev", "pods", policyRule({ verbs: ["get"], apiGroups: [""], resources: ["pods"] }))],
        [clusterRole("health", policyRule({ verbs: ["get"], nonResourceUrls: ["/healthz"] }))],
        [roleBinding("dev", "a", "Role", "pods", userSubject("alice")), roleBinding("dev", "b", "Role", "gone", userSubject("alice"))],
        [clusterRoleBinding("h", "health", userSubject("alice"))],
      ),
    );
    const out = await selfSubjectRulesReview(user("alice"), rbacRules(rbac), { spec: { namespace: "dev" } });
    const status = out["status"] as Record<string, unknown>;
    assert.deepEqual(status["resourceRules"], [{ verbs: ["get"], apiGroups: [""], resources: ["pods"] }]);
    assert.deepEqual(status["nonResourceRules"], [{ verbs: ["get"], nonResourceURLs: ["/healthz"] }]);
    assert.equal(status["incomplete"], false);
    assert.match(String(status["evaluationError"]), /gone/);
    const elsewhere = (await selfSubjectRulesReview(user("alice"), rbacRules(rbac), { spec: { namespace: "prod" } }))["status"] as Record<string, unknown>;
    assert.deepEqual(elsewhere["resourceRules"], []);
  });
});
