// API Priority and Fairness: seats by priority level, flows in turn, 429 when
// a level's queue is full or a wait too long. Pure logic: requests are
// promises the test ends by hand.
import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { ApiError, statusOf } from "@choreo/kit";
import { Registry } from "prom-client";
import type { UserInfo } from "../auth/types.js";
import { classify, type Classification, type PriorityLevel } from "./classify.js";
import { FlowControl } from "./flow-control.js";

/** A request that runs until the test ends it; `ran` says whether it got its seat. */
function held(): { fn: () => Promise<string>; ran: () => boolean; end: (v?: string) => void } {
  let ran = false;
  let end!: (v: string) => void;
  const done = new Promise<string>((r) => (end = r));
  return {
    fn: () => {
      ran = true;
      return done;
    },
    ran: () => ran,
    end: (v = "ok") => end(v),
  };
}

const at = (level: PriorityLevel, flow = "f"): Classification => ({ level, schema: level, flow });
const turn = () => new Promise((r) => setImmediate(r));

describe("flow control", () => {
  it("runs a level's requests past the server's seats in order once seats free", async () => {
    // 6 seats: global-default is guaranteed 1 and borrows the 5 idle ones.
    const fc = new FlowControl({ concurrency: 6, maxWaitMs: 60_000, queueLimit: 100 });
    const reqs = Array.from({ length: 8 }, () => held());
    const answers = reqs.map((r) => fc.run(at("global-default"), r.fn));
    await turn();
    assert.deepEqual(
      reqs.map((r) => r.ran()),
      [true, true, true, true, true, true, false, false],
    );
    assert.equal(fc.snapshot()["global-default"]!.waiting, 2);
    reqs[3]!.end("fourth");
    assert.equal(await answers[3], "fourth");
    await turn();
    assert.deepEqual(
      reqs.map((r) => r.ran()),
      [true, true, true, true, true, true, true, false],
    );
    for (const r of reqs) r.end();
    await Promise.all(answers);
    assert.deepEqual(fc.snapshot()["global-default"], { executing: 0, waiting: 0, nominal: 1 });
  });

  it("serves a level's flows in turn: one busy client does not make another wait behind all of its requests", async () => {
    // 1 seat in all: every level is guaranteed 1, and nothing else runs.
    const fc = new FlowControl({ concurrency: 1, maxWaitMs: 60_000, queueLimit: 100 });
    const order: string[] = [];
    const first = held();
    const running = fc.run(at("workload-low", "busy"), first.fn);
    const queued = [
      ...Array.from({ length: 5 }, (_, i) => fc.run(at("workload-low", "busy"), async () => void order.push(`busy-${i}`))),
      fc.run(at("workload-low", "quiet"), async () => void order.push("quiet")),
    ];
    first.end();
    await running;
    await Promise.all(queued);
    assert.deepEqual(order, ["busy-0", "quiet", "busy-1", "busy-2", "busy-3", "busy-4"]);
  });

  it("starts a level below its guarantee at once, however many seats the others borrow", async () => {
    const fc = new FlowControl({ concurrency: 10, maxWaitMs: 60_000, queueLimit: 100 });
    const pods = Array.from({ length: 12 }, () => held());
    const podAnswers = pods.map((r) => fc.run(at("workload-high", "default"), r.fn));
    await turn();
    assert.equal(pods.filter((r) => r.ran()).length, 10, "workload-high borrowed every idle seat");
    const lease = held();
    const leaseAnswer = fc.run(at("node-high", "system:node:n1"), lease.fn);
    assert.ok(lease.ran(), "a node's heartbeat runs at once: node-high is below its guarantee");
    lease.end("renewed");
    assert.equal(await leaseAnswer, "renewed");
    // And again while workload-high still holds every seat and has two waiting.
    const lease2 = held();
    const lease2Answer = fc.run(at("node-high", "system:node:n1"), lease2.fn);
    assert.ok(lease2.ran());
    lease2.end();
    await lease2Answer;
    for (const r of pods) r.end();
    await Promise.all(podAnswers);
  });

  it("gives a seat freed in a level below its guarantee to that level's waiter, not to a level that borrows", async () => {
    // 10 seats: workload-low is guaranteed 5 and borrows the rest; system is guaranteed 2.
    const fc = new FlowControl({ concurrency: 10, maxWaitMs: 60_000, queueLimit: 100 });
    const low = Array.from({ length: 12 }, () => held());
    const lowAnswers = low.map((r) => fc.run(at("workload-low", "ns"), r.fn));
    const sys = Array.from({ length: 3 }, () => held());
    const sysAnswers = sys.map((r) => fc.run(at("system", "system:node:n1"), r.fn));
    await turn();
    assert.equal(low.filter((r) => r.ran()).length, 10);
    assert.deepEqual(
      sys.map((r) => r.ran()),
      [true, true, false],
      "system's guaranteed two start at once; its third waits (the server is past its limit)",
    );
    sys[0]!.end();
    await sysAnswers[0];
    await turn();
    assert.ok(sys[2]!.ran(), "system's freed seat went to system's waiter");
    assert.equal(low.filter((r) => r.ran()).length, 10, "workload-low, above its guarantee, still waits");
    for (const r of [...low, ...sys]) r.end();
    await Promise.all([...lowAnswers, ...sysAnswers]);
  });

  it("runs system:masters' requests (exempt) at once, never queued", async () => {
    const fc = new FlowControl({ concurrency: 1, maxWaitMs: 60_000, queueLimit: 0 });
    const blocking = held();
    const blocked = fc.run(at("global-default"), blocking.fn);
    const admin = held();
    const adminAnswer = fc.run(at("exempt", "admin"), admin.fn);
    assert.ok(admin.ran());
    assert.equal(fc.snapshot()["exempt"]!.executing, 1);
    admin.end();
    blocking.end();
    await Promise.all([adminAnswer, blocked]);
  });

  it("refuses with 429 TooManyRequests, Retry-After 1 s, nothing run, when the level's queue is full", async () => {
    const registry = new Registry();
    const fc = new FlowControl({ concurrency: 1, maxWaitMs: 60_000, queueLimit: 1, registry });
    const a = held();
    const b = held();
    const c = held();
    const answers = [fc.run(at("global-default"), a.fn), fc.run(at("global-default"), b.fn)];
    const refused = await fc.run(at("global-default"), c.fn).then(
      () => assert.fail("the third request ran"),
      (err: unknown) => err,
    );
    assert.ok(refused instanceof ApiError);
    const st = statusOf(refused);
    assert.equal(st.code, 429);
    assert.equal(st.reason, "TooManyRequests");
    assert.equal(st.details?.retryAfterSeconds, 1);
    assert.match(st.message, /priority level global-default/);
    assert.equal(c.ran(), false);
    a.end();
    b.end();
    await Promise.all(answers);
    assert.ok(b.ran(), "the queued one ran once a seat was free");
    assert.match(await registry.metrics(), /choreo_api_flowcontrol_rejected_requests_total\{priority_level="global-default",reason="queue-full"\} 1/);
  });

  it("refuses with 429 a request that waited longer than the limit, and never runs it after", async () => {
    const registry = new Registry();
    const fc = new FlowControl({ concurrency: 1, maxWaitMs: 50, queueLimit: 100, registry });
    const a = held();
    const waiting = held();
    const answer = fc.run(at("workload-low", "ns"), a.fn);
    const err = await fc.run(at("workload-low", "ns"), waiting.fn).then(
      () => assert.fail("ran"),
      (e: unknown) => e,
    );
    assert.equal(statusOf(err).code, 429);
    assert.match(statusOf(err).message, /waited 50 ms/);
    assert.equal(fc.snapshot()["workload-low"]!.waiting, 0);
    // Its seat goes to the next live request, not to the refused one.
    const next = held();
    const nextAnswer = fc.run(at("workload-low", "ns"), next.fn);
    a.end();
    await answer;
    await turn();
    assert.equal(waiting.ran(), false);
    assert.ok(next.ran());
    next.end();
    await nextAnswer;
    assert.match(await registry.metrics(), /choreo_api_flowcontrol_rejected_requests_total\{priority_level="workload-low",reason="time-out"\} 1/);
    assert.match(await registry.metrics(), /choreo_api_flowcontrol_current_executing_requests\{priority_level="workload-low"\} 0/);
  });

  it("gives back the seat of a request that fails", async () => {
    const fc = new FlowControl({ concurrency: 1, maxWaitMs: 60_000, queueLimit: 10 });
    await assert.rejects(
      fc.run(at("system"), () => Promise.reject(new Error("boom"))),
      /boom/,
    );
    assert.equal(fc.snapshot()["system"]!.executing, 0);
    assert.equal(await fc.run(at("system"), async () => "next"), "next");
  });
});

describe("classify", () => {
  const user = (name: string, ...groups: string[]): UserInfo => ({ name, uid: name, groups: [...groups, "system:authenticated"], extra: {} });
  const attrs = (verb: string, resource: string, namespace = "default") => ({ verb, resource, namespace, apiGroup: "" });

  it("puts requests where Kubernetes' default FlowSchemas do", () => {
    const cases: [UserInfo | undefined, ReturnType<typeof attrs>, PriorityLevel, string][] = [
      [user("admin", "system:masters"), attrs("create", "pods"), "exempt", "admin"],
      [user("system:node:n1", "system:nodes"), attrs("update", "leases", "kube-node-lease"), "node-high", "system:node:n1"],
      [user("system:node:n1", "system:nodes"), attrs("update", "nodes", ""), "node-high", "system:node:n1"],
      [user("system:node:n1", "system:nodes"), attrs("update", "pods"), "system", "system:node:n1"],
      [user("system:hollow-nodes:h", "system:nodes", "system:hollow-nodes"), attrs("create", "events"), "system", "system:hollow-nodes:h"],
      [user("system:kube-scheduler"), attrs("update", "leases", "kube-system"), "leader-election", "system:kube-scheduler"],
      [user("system:kube-scheduler"), attrs("create", "pods", "web"), "workload-high", "web"],
      [user("system:kube-controller-manager"), attrs("create", "pods", "web"), "workload-high", "web"],
      [user("system:serviceaccount:kube-system:dns", "system:serviceaccounts"), attrs("list", "endpoints", ""), "workload-high", ""],
      [user("system:serviceaccount:web:app", "system:serviceaccounts"), attrs("get", "configmaps", "web"), "workload-low", "web"],
      [user("alice"), attrs("get", "pods"), "global-default", "alice"],
      [undefined, attrs("bind", ""), "global-default", ":bind"],
    ];
    for (const [u, a, level, flow] of cases) {
      const c = classify(u, a);
      assert.equal(c.level, level, `${u?.name} ${a.verb} ${a.resource}`);
      assert.equal(c.flow, flow, `${u?.name} ${a.verb} ${a.resource}`);
    }
  });
});
