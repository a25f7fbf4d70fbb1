import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { podSecurityConfigFromEnv, policyOf, type Level, type Mode } from "./policy.js";

// A namespace's labels over the defaults, as Kubernetes' PolicyToEvaluate;
// the api's configuration from its environment.

const DEFAULTS: Record<Mode, Level> = { enforce: "baseline", warn: "baseline", audit: "baseline" };
const L = "pod-security.kubernetes.io/";

describe("pod security policy of a namespace", () => {
  it("no labels: the defaults at latest", () => {
    const { policy, errors } = policyOf({}, DEFAULTS);
    assert.deepEqual(errors, []);
    assert.deepEqual(policy.enforce, { level: "baseline", version: "latest" });
  });

  it("labels set each mode; a version label is kept for the message", () => {
    const { policy } = policyOf({ [`${L}enforce`]: "privileged", [`${L}audit`]: "restricted", [`${L}audit-version`]: "v1.30" }, DEFAULTS);
    assert.deepEqual(policy, {
      enforce: { level: "privileged", version: "latest" },
      audit: { level: "restricted", version: "v1.30" },
      warn: { level: "baseline", version: "latest" },
    });
  });

  it("warn follows an enforce label set stricter, unless warn is labelled", () => {
    assert.deepEqual(policyOf({ [`${L}enforce`]: "restricted", [`${L}enforce-version`]: "v1.29" }, DEFAULTS).policy.warn, {
      level: "restricted",
      version: "v1.29",
    });
    assert.equal(policyOf({ [`${L}enforce`]: "restricted", [`${L}warn`]: "privileged" }, DEFAULTS).policy.warn.level, "privileged");
    assert.equal(policyOf({ [`${L}enforce`]: "privileged" }, DEFAULTS).policy.warn.level, "baseline");
  });

  it("an unknown level or version is a field error naming the label", () => {
    const { errors } = policyOf({ [`${L}enforce`]: "Baseline", [`${L}warn-version`]: "1.30" }, DEFAULTS);
    assert.deepEqual(
      errors.map((e) => `${e.field}: ${e.message}`),
      [
        `metadata.labels[${L}enforce]: Invalid value: "Baseline": must be one of privileged, baseline, restricted`,
        `metadata.labels[${L}warn-version]: Invalid value: "1.30": must be "latest" or "v1.x"`,
      ],
    );
  });
});

describe("pod security configuration from the environment", () => {
  it("defaults: baseline everywhere, kube-system exempt, no exempt users", () => {
    assert.deepEqual(podSecurityConfigFromEnv({}), {
      defaults: { enforce: "baseline", warn: "baseline", audit: "baseline" },
      exemptUsernames: [],
      exemptNamespaces: ["kube-system"],
    });
  });

  it("warn and audit follow the enforce default unless set; lists are comma-separated", () => {
    const c = podSecurityConfigFromEnv({
      CHOREO_POD_SECURITY_DEFAULT_ENFORCE: "restricted",
      CHOREO_POD_SECURITY_DEFAULT_AUDIT: "privileged",
      CHOREO_POD_SECURITY_EXEMPT_USERNAMES: "ops, ci",
      CHOREO_POD_SECURITY_EXEMPT_NAMESPACES: "",
    });
    assert.deepEqual(c, { defaults: { enforce: "restricted", warn: "restricted", audit: "privileged" }, exemptUsernames: ["ops", "ci"], exemptNamespaces: [] });
  });

  it("an unknown level names the variable", () => {
    assert.throws(
      () => podSecurityConfigFromEnv({ CHOREO_POD_SECURITY_DEFAULT_WARN: "strict" }),
      /CHOREO_POD_SECURITY_DEFAULT_WARN must be one of privileged, baseline, restricted/,
    );
  });
});
