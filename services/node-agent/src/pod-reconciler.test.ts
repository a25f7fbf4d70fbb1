// The deregistration wait: a deleted pod a Service still sends traffic to keeps running until it is out of the
// Endpoints (and the proxies had time to follow), within half its grace period and the agent's cap.
import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { PROXY_PROPAGATION_MS, deregistrationWait, deregistrationWaitMsFromEnv } from "./pod-reconciler.js";

const base = { listed: false, unlistedForMs: undefined, graceSeconds: 30, maxWaitMs: 15_000, waitedMs: 0 };

describe("deregistrationWait", () => {
  it("stops at once a pod no Service names, a force delete, and one whose budget is spent", () => {
    assert.equal(deregistrationWait(base), 0, "never named: nothing routes to it");
    assert.equal(deregistrationWait({ ...base, listed: true, graceSeconds: 0 }), 0, "grace 0: force delete");
    assert.equal(deregistrationWait({ ...base, listed: true, waitedMs: 15_000 }), 0, "the cap spent");
    assert.equal(deregistrationWait({ ...base, listed: true, graceSeconds: 10, waitedMs: 5_000 }), 0, "half of a 10 s grace spent");
  });

  it("waits while named, within half the grace period and the cap", () => {
    assert.equal(deregistrationWait({ ...base, listed: true }), 15_000, "30 s grace: the 15 s cap");
    assert.equal(deregistrationWait({ ...base, listed: true, graceSeconds: 10 }), 5_000, "10 s grace: 5 s");
    assert.equal(deregistrationWait({ ...base, listed: true, graceSeconds: 10, waitedMs: 4_000 }), 1_000);
  });

  it("once out of the Endpoints, gives the proxies their propagation time, no more than the budget", () => {
    assert.equal(deregistrationWait({ ...base, unlistedForMs: 0 }), PROXY_PROPAGATION_MS);
    assert.equal(deregistrationWait({ ...base, unlistedForMs: PROXY_PROPAGATION_MS - 300 }), 300);
    assert.equal(deregistrationWait({ ...base, unlistedForMs: PROXY_PROPAGATION_MS }), 0);
    assert.equal(deregistrationWait({ ...base, unlistedForMs: 0, graceSeconds: 1, waitedMs: 200 }), 300, "within half a 1 s grace");
  });

  it("reads its cap from CHOREO_DEREGISTRATION_WAIT_MS (0 turns it off; nonsense keeps the default)", () => {
    assert.equal(deregistrationWaitMsFromEnv({}), 15_000);
    assert.equal(deregistrationWaitMsFromEnv({ CHOREO_DEREGISTRATION_WAIT_MS: "0" }), 0);
    assert.equal(deregistrationWaitMsFromEnv({ CHOREO_DEREGISTRATION_WAIT_MS: "2500" }), 2_500);
    assert.equal(deregistrationWaitMsFromEnv({ CHOREO_DEREGISTRATION_WAIT_MS: "soon" }), 15_000);
    assert.equal(deregistrationWait({ ...base, listed: true, maxWaitMs: 0 }), 0, "cap 0: Kubernetes' behaviour");
  });
});
