import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { conflict, notFound } from "@choreo/kit";
import type { ApiClient } from "@choreo/kit/client";
import type { Event } from "@choreo/kit/gen/choreo/core/v1/core";
import { silentLogger } from "@choreo/kit/log";
import { waitFor } from "@choreo/kit/testing";
import { COMBINED_PREFIX, EventRecorder, objectRef, type EventRecorderOptions } from "./recorder.js";

/** A recording fake of the Events api: resourceVersion checked like the api's; writes can wait at a gate. */
class FakeEvents {
  readonly stored = new Map<string, Event>();
  readonly ops: string[] = [];
  gate: Promise<void> | undefined;
  private rv = 0;
  private key = (e: Event): string => `${e.metadata?.namespace}/${e.metadata?.name}`;
  private put(e: Event): Event {
    const v = structuredClone({ ...e, metadata: { ...e.metadata!, resourceVersion: String(++this.rv) } });
    this.stored.set(this.key(v), v);
    return structuredClone(v);
  }
  async get(namespace: string, name: string): Promise<Event> {
    this.ops.push("get");
    const e = this.stored.get(`${namespace}/${name}`);
    if (!e) throw notFound("events", name);
    return structuredClone(e);
  }
  async create(e: Event): Promise<Event> {
    this.ops.push("create");
    await this.gate;
    return this.put(e);
  }
  async update(e: Event): Promise<Event> {
    this.ops.push("update");
    await this.gate;
    const cur = this.stored.get(this.key(e));
    if (!cur) throw notFound("events", e.metadata?.name ?? "");
    if (cur.metadata?.resourceVersion !== e.metadata?.resourceVersion) throw conflict("events", e.metadata?.name ?? "", "the object has been modified");
    return this.put(e);
  }
  /** Someone else writes the Event. */
  touch(e: Event): void {
    this.put({ ...e, action: "touched" });
  }
  all(): Event[] {
    return [...this.stored.values()];
  }
}

function recorder(opts: EventRecorderOptions = {}): { r: EventRecorder; api: FakeEvents } {
  const api = new FakeEvents();
  // The recorder only calls typed("event").get/create/update; the fake stands in for those.
  const client = { typed: () => api } as unknown as Pick<ApiClient, "typed">;
  return { r: new EventRecorder(client, "replication-controller", silentLogger(), opts), api };
}

const rc = objectRef("ReplicationController", "v1", { metadata: { namespace: "default", name: "web", uid: "u-rc" } });
const podRef = (i: number) => objectRef("Pod", "v1", { metadata: { namespace: "default", name: `p${i}`, uid: `u${i}` } });

describe("EventRecorder", () => {
  it("creates the first occurrence at once", async () => {
    const { r, api } = recorder();
    r.emit(podRef(1), "Normal", "Scheduled", "Successfully assigned default/p1 to n1");
    await waitFor(() => api.all().length === 1, { message: "created" });
    const [e] = api.all();
    assert.equal(e?.count, 1);
    assert.equal(e?.reason, "Scheduled");
    assert.equal(e?.source?.component, "replication-controller");
    assert.equal(e?.involvedObject?.uid, "u1");
  });

  it("coalesces repeats: while the create is in flight and for the minimum interval they only count; the last count is written", async () => {
    const { r, api } = recorder({ minWriteIntervalMs: 50 });
    for (let i = 0; i < 100; i++) r.emit(podRef(1), "Warning", "BackOff", "Back-off restarting failed container c in pod p1");
    await waitFor(() => api.all()[0]?.count === 100, { message: "count 100 written" });
    assert.deepEqual(api.ops, ["create", "update"]);
    assert.equal(api.all().length, 1);
  });

  it("holds count bumps within the interval until flushed, then writes one update without a read", async () => {
    const { r, api } = recorder({ minWriteIntervalMs: 600_000 });
    r.emit(podRef(1), "Normal", "Pulled", "pulled");
    await waitFor(() => api.all().length === 1, { message: "created" });
    for (let i = 0; i < 20; i++) r.emit(podRef(1), "Normal", "Pulled", "pulled");
    await new Promise((res) => setImmediate(res));
    assert.deepEqual(api.ops, ["create"], "bumps within the interval stay in memory");
    await r.flush();
    assert.deepEqual(api.ops, ["create", "update"]);
    assert.equal(api.all()[0]?.count, 21);
  });

  it("aggregates similar events after 10 into one combined Event with the latest message", async () => {
    const { r, api } = recorder({ minWriteIntervalMs: 600_000 });
    for (let i = 1; i <= 25; i++) r.emit(rc, "Normal", "SuccessfulCreate", `Created pod: web-${i}`);
    r.emit(rc, "Normal", "SuccessfulDelete", "Deleted pod: web-1"); // another reason: its own Event
    await r.flush();
    const events = api.all();
    const creates = events.filter((e) => e.reason === "SuccessfulCreate");
    assert.equal(creates.length, 10, "9 apart, then one combined");
    const combined = creates.filter((e) => e.message.startsWith(COMBINED_PREFIX));
    assert.equal(combined.length, 1);
    assert.equal(combined[0]?.message, `${COMBINED_PREFIX}Created pod: web-25`);
    assert.equal(combined[0]?.count, 16);
    assert.equal(
      creates.reduce((n, e) => n + e.count, 0),
      25,
      "every occurrence counted",
    );
    assert.equal(events.filter((e) => e.reason === "SuccessfulDelete").length, 1);
    assert.equal(api.ops.filter((o) => o !== "get").length, 12, "11 creates and one update for 26 occurrences");
  });

  it("does not aggregate events of different objects", async () => {
    const { r, api } = recorder();
    for (let i = 1; i <= 15; i++) r.emit(podRef(i), "Normal", "Scheduled", `Successfully assigned default/p${i} to n1`);
    await r.flush();
    assert.equal(api.all().length, 15);
    assert.ok(api.all().every((e) => !e.message.startsWith(COMBINED_PREFIX) && e.count === 1));
  });

  it("on a conflict re-reads and applies the bump to the fresh object", async () => {
    const { r, api } = recorder({ minWriteIntervalMs: 600_000 });
    await r.record(podRef(1), "Warning", "BackOff", "back-off");
    api.touch(api.all()[0]!);
    r.emit(podRef(1), "Warning", "BackOff", "back-off");
    await r.flush();
    assert.deepEqual(api.ops, ["create", "update", "get", "update"]);
    const [e] = api.all();
    assert.equal(e?.count, 2);
    assert.equal(e?.action, "touched", "written on the fresh object");
  });

  it("creates the Event again, with its count, when it was deleted", async () => {
    const { r, api } = recorder({ minWriteIntervalMs: 600_000 });
    await r.record(podRef(1), "Warning", "BackOff", "back-off");
    api.stored.clear(); // expired
    r.emit(podRef(1), "Warning", "BackOff", "back-off");
    r.emit(podRef(1), "Warning", "BackOff", "back-off");
    await r.flush();
    assert.deepEqual(api.ops, ["create", "update", "create"]);
    assert.equal(api.all().length, 1);
    assert.equal(api.all()[0]?.count, 3);
  });

  it("record() waits until its occurrence is written, even within the interval", async () => {
    const { r, api } = recorder({ minWriteIntervalMs: 600_000 });
    let open = (): void => undefined;
    api.gate = new Promise<void>((res) => (open = res));
    r.emit(podRef(1), "Normal", "Killing", "Stopping container c");
    const recorded = r.record(podRef(1), "Normal", "Killing", "Stopping container c");
    api.gate = undefined;
    open();
    await recorded;
    assert.equal(api.all()[0]?.count, 2);
  });
});
