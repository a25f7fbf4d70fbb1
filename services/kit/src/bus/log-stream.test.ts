import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { badRequest } from "../api/errors.js";
import { agentLogsSubject, agentSubject } from "./subjects.js";
import { decodeLogError, encodeLogError, LogFrame, logCancelSubject, logFrameHeaders, logFrameOf, logHeartbeatSubject } from "./log-stream.js";

describe("log stream vocabulary", () => {
  it("names node agent subjects with dots escaped", () => {
    assert.equal(agentLogsSubject("node-1"), "choreo.agent.node-1.logs");
    assert.equal(agentSubject("n.example.com", "exec"), "choreo.agent.n~example~com.exec");
    assert.equal(logHeartbeatSubject("_INBOX.x"), "_INBOX.x.hb");
    assert.equal(logCancelSubject("_INBOX.x"), "_INBOX.x.cancel");
  });

  it("reads frame kinds back from headers, and nothing from other messages", () => {
    for (const k of Object.values(LogFrame)) assert.equal(logFrameOf({ headers: logFrameHeaders(k) }), k);
    assert.equal(logFrameOf({ headers: undefined }), undefined);
  });

  it("carries a Status in error frames", () => {
    const err = decodeLogError(encodeLogError(badRequest("container x is not valid for pod web").status));
    assert.equal(err.code, 400);
    assert.equal(err.reason, "BadRequest");
    assert.equal(err.message, "container x is not valid for pod web");
    assert.equal(decodeLogError(new Uint8Array([0xff, 0xff, 0xff])).code, 500);
  });
});
