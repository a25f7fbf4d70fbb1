// The gateway fuzzer's fixed-seed slice (npm run fuzz runs 100,000 cases with
// a new seed each time): 1,000 hostile requests against a real gateway over
// the real registry on the in-memory storage — no 5xx, no hung request, no
// crash, the store's revision unchanged by every 4xx.
import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { formatReport, fuzzGateway } from "./gateway-fuzz.js";

describe("gateway fuzz (fixed seed)", () => {
  it("1,000 hostile requests: never a 5xx or a hang; 4xx change nothing", { timeout: 300_000 }, async () => {
    const report = await fuzzGateway({ numRuns: 1000, seed: 20261126 });
    console.log(formatReport(report));
    assert.equal(report.cases, 1000);
    // The generators reach past routing and decoding: some requests succeed, many are refused for their bodies.
    assert.ok((report.statuses.get(200) ?? 0) > 0, "no 200 at all: the generators no longer make valid requests");
    assert.ok((report.statuses.get(400) ?? 0) > 50, "few 400s: the bodies no longer reach decoding");
  });
});
