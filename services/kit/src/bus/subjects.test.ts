import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { agentExecSubject, agentLogsSubject, agentSubject, podsOnNodeFilter } from "./subjects.js";

describe("bus subjects", () => {
  it("names node agent subjects with dots escaped", () => {
    assert.equal(agentLogsSubject("node-1"), "choreo.agent.node-1.logs");
    assert.equal(agentExecSubject("node-1"), "choreo.agent.node-1.exec");
    assert.equal(agentSubject("n.example.com", "exec"), "choreo.agent.n~example~com.exec");
    assert.equal(podsOnNodeFilter("n.example.com"), "choreo.ev.pods.n~example~com.>");
  });
});
