import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { ApiError, notFound } from "@choreo/kit";
import type { AuditEntry, AuditLog, BeginOptions, FinishOptions } from "../audit/index.js";
import type { ApiHandlers } from "../handlers/api-handlers.js";
import { requestUserInfo } from "../registry/generic/admission-context.js";
import type { RequestScope } from "../registry/generic/request-scope.js";
import { guardedCall, guardedHandlers } from "./guarded-handlers.js";
import type { Authorizer, UserInfo } from "./types.js";

const alice: UserInfo = { name: "alice", uid: "u1", groups: ["dev"], extra: {} };

/** An audit log keeping what it was told. */
function memoryAudit(): { log: AuditLog; events: { begin: BeginOptions; annotations: Record<string, string>; finish?: FinishOptions }[] } {
  const events: { begin: BeginOptions; annotations: Record<string, string>; finish?: FinishOptions }[] = [];
  const log: AuditLog = {
    begin(o): AuditEntry {
      const e: (typeof events)[number] = { begin: o, annotations: {} };
      events.push(e);
      return {
        auditID: String(events.length),
        level: "Request",
        wantsRequestObject: true,
        wantsResponseObject: false,
        annotate: (k, v) => (e.annotations[k] = v),
        finish: (f) => (e.finish ??= f),
      };
    },
    close: async () => undefined,
  };
  return { log, events };
}

/** Handlers whose create answers with the user admission sees; whose delete fails. */
function handlers(): { h: ApiHandlers; calls: string[] } {
  const calls: string[] = [];
  const h = {
    create: async (_req: unknown, scope: RequestScope) => {
      calls.push("create");
      return { seenBy: requestUserInfo({ scope })?.name };
    },
    delete: async () => {
      calls.push("delete");
      throw notFound("pods", "x");
    },
  } as unknown as ApiHandlers;
  return { h, calls };
}

const denyDeletes: Authorizer = { authorize: (a) => (a.verb === "delete" ? { allowed: false, reason: "no deletes" } : { allowed: true, reason: "" }) };
const door = (log: AuditLog) => ({ log, requestURI: (m: string) => `nats:choreo.api.${m}`, userAgent: "nats" });
const createReq = { object: undefined, resource: "pods", namespace: "default" };

describe("guarded calls", () => {
  it("run an allowed call as the user (admission sees them) and audit its outcome with the request", async () => {
    const { log, events } = memoryAudit();
    const { h, calls } = handlers();
    const res = await guardedCall(h, denyDeletes, alice, door(log), "create", createReq);
    assert.deepEqual(res, { seenBy: "alice" });
    assert.deepEqual(calls, ["create"]);
    assert.equal(events.length, 1);
    assert.equal(events[0]!.begin.requestURI, "nats:choreo.api.create");
    assert.equal(events[0]!.begin.userAgent, "nats");
    assert.equal(events[0]!.annotations["authorization.k8s.io/decision"], "allow");
    assert.equal(events[0]!.finish?.code, 201);
    assert.equal(events[0]!.finish?.requestObject, createReq);
  });

  it("refuse a forbidden call with 403 before it runs, and audit the refusal", async () => {
    const { log, events } = memoryAudit();
    const { h, calls } = handlers();
    await assert.rejects(guardedCall(h, denyDeletes, alice, door(log), "delete", { resource: "pods", namespace: "default", name: "x" }), (e: unknown) => {
      return e instanceof ApiError && e.code === 403;
    });
    assert.deepEqual(calls, [], "nothing ran");
    assert.equal(events[0]!.annotations["authorization.k8s.io/decision"], "forbid");
    assert.equal(events[0]!.annotations["authorization.k8s.io/reason"], "no deletes");
    assert.equal(events[0]!.finish?.code, 403);
  });

  it("audit a failing call with its Status; the handler set does the same as one call", async () => {
    for (const run of [
      (h: ApiHandlers, log: AuditLog) =>
        guardedCall(h, { authorize: () => ({ allowed: true, reason: "" }) }, alice, door(log), "delete", { resource: "pods", name: "x" }),
      (h: ApiHandlers, log: AuditLog) =>
        guardedHandlers(h, { authorize: () => ({ allowed: true, reason: "" }) }, alice, door(log)).delete({ resource: "pods", name: "x" } as never),
    ]) {
      const { log, events } = memoryAudit();
      const { h } = handlers();
      await assert.rejects(run(h, log), (e: unknown) => e instanceof ApiError && e.code === 404);
      assert.equal(events[0]!.finish?.code, 404);
      assert.equal(events[0]!.finish?.status?.reason, "NotFound");
    }
  });
});
