import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { exitStatus, parseSize } from "./exec-server.js";

describe("exec server vocabulary", () => {
  it("reads Kubernetes' resize message and refuses anything else", () => {
    const enc = (s: string) => new TextEncoder().encode(s);
    assert.deepEqual(parseSize(enc('{"Width":120,"Height":40}')), { width: 120, height: 40 });
    assert.equal(parseSize(enc('{"Width":-1,"Height":40}')), undefined);
    assert.equal(parseSize(enc('{"Width":1.5,"Height":40}')), undefined);
    assert.equal(parseSize(enc('{"Width":70000,"Height":40}')), undefined);
    assert.equal(parseSize(enc("not json")), undefined);
  });

  it("ends with Success, or NonZeroExitCode carrying the code where kubectl reads it", () => {
    assert.equal(exitStatus(0, ["true"]).status, "Success");
    const s = exitStatus(3, ["sh", "-c", "exit 3"]);
    assert.equal(s.status, "Failure");
    assert.equal(s.reason, "NonZeroExitCode");
    assert.deepEqual(s.details?.causes, [{ reason: "ExitCode", message: "3", field: "" }]);
    assert.match(s.message, /command terminated with non-zero exit code/);
  });
});
