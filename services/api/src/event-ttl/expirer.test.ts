// The expirer's bookkeeping on a fake clock and a delete recorder (pure
// logic): when an Event counts as written, what a sweep deletes, what a
// write in between saves. expirer-stack.test.ts makes the claim against the
// real api over nats-server and redis-server.
import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { conflict, notFound, wrap } from "@choreo/kit";
import { silentLogger } from "@choreo/kit/log";
import { Event } from "@choreo/kit/gen/choreo/core/v1/core";
import type { DeleteRequest } from "@choreo/kit/gen/choreo/api/v1/api";
import { EventExpirer, lastWritten } from "./expirer.js";

const HOUR = 3_600_000;
const T0 = Date.parse("2026-11-26T10:00:00Z");

function event(name: string, rv: number, times: { created?: string; last?: string; eventTime?: string; series?: string } = {}) {
  return Event.fromPartial({
    metadata: { namespace: "default", name, resourceVersion: String(rv), creationTimestamp: times.created ?? "" },
    lastTimestamp: times.last ?? "",
    eventTime: times.eventTime ?? "",
    ...(times.series ? { series: { count: 2, lastObservedTime: times.series } } : {}),
  });
}

function setup(reply: (req: DeleteRequest) => void = () => undefined) {
  let now = T0;
  const deletes: DeleteRequest[] = [];
  const expirer = new EventExpirer({
    handlers: {
      list: () => Promise.reject(new Error("not used")),
      watch: () => {
        throw new Error("not used");
      },
      delete: (req) => {
        deletes.push(req);
        reply(req);
        return Promise.resolve(wrap("event", event(req.name, 0)));
      },
    },
    ttlMs: HOUR,
    log: silentLogger(),
    now: () => now,
  });
  return { expirer, deletes, advance: (ms: number) => (now += ms) };
}

describe("event expiry", () => {
  it("an Event was last written at the latest of its own times", () => {
    assert.equal(lastWritten(event("a", 1, { created: "2026-11-26T09:00:00Z" })), Date.parse("2026-11-26T09:00:00Z"));
    assert.equal(
      lastWritten(event("b", 1, { created: "2026-11-26T09:00:00Z", last: "2026-11-26T09:30:00Z", series: "2026-11-26T09:45:00.123456Z" })),
      Date.parse("2026-11-26T09:45:00.123Z"),
    );
    assert.ok(Number.isNaN(lastWritten(event("c", 1))));
  });

  it("listed Events expire a TTL after their own last write; live ones a TTL after they were seen", async () => {
    const { expirer, deletes, advance } = setup();
    // Listed at a restart: written 50 min ago and 10 min ago.
    expirer.observe({ type: "ADDED", object: wrap("event", event("old", 5, { created: "2026-11-26T09:10:00Z" })) }, false);
    expirer.observe({ type: "ADDED", object: wrap("event", event("recent", 6, { created: "2026-11-26T09:50:00Z" })) }, false);
    // Seen live now, though it claims an old time (a client's clock): the write is now.
    expirer.observe({ type: "ADDED", object: wrap("event", event("live", 7, { last: "2026-11-26T08:00:00Z" })) }, true);
    assert.equal(await expirer.sweep(), 0);
    advance(10 * 60_000 + 1);
    assert.equal(await expirer.sweep(), 1);
    assert.deepEqual(
      deletes.map((d) => [d.namespace, d.name, d.options?.preconditions?.resourceVersion]),
      [["default", "old", "5"]],
      "deleted with the version it was seen at",
    );
    advance(40 * 60_000);
    assert.equal(await expirer.sweep(), 1);
    advance(10 * 60_000);
    assert.equal(await expirer.sweep(), 1);
    assert.deepEqual(
      deletes.map((d) => d.name),
      ["old", "recent", "live"],
    );
    assert.equal(expirer.size, 0);
  });

  it("an Event written again lives on: its update moves the expiry, and a delete racing the write is refused by its precondition", async () => {
    const { expirer, deletes, advance } = setup((req) => {
      if (req.name === "raced" && req.options?.preconditions?.resourceVersion === "2") throw conflict("events", req.name, "the object has been modified");
    });
    expirer.observe({ type: "ADDED", object: wrap("event", event("bumped", 1)) }, true);
    expirer.observe({ type: "ADDED", object: wrap("event", event("raced", 2)) }, true);
    advance(50 * 60_000);
    expirer.observe({ type: "MODIFIED", object: wrap("event", event("bumped", 3)) }, true);
    advance(11 * 60_000);
    assert.equal(await expirer.sweep(), 0, "raced was written meanwhile (409); bumped is not due");
    assert.equal(expirer.stats.kept, 1);
    assert.deepEqual(
      deletes.map((d) => d.name),
      ["raced"],
    );
    // The write's MODIFIED arrives: a new expiry.
    expirer.observe({ type: "MODIFIED", object: wrap("event", event("raced", 4)) }, true);
    assert.equal(await expirer.sweep(), 0);
    advance(60 * 60_000);
    assert.equal(await expirer.sweep(), 2);
  });

  it("an Event deleted by someone else is forgotten: by its DELETED, or by the NotFound of the delete", async () => {
    const { expirer, advance } = setup((req) => {
      if (req.name === "gone") throw notFound("events", req.name);
    });
    expirer.observe({ type: "ADDED", object: wrap("event", event("deleted", 1)) }, true);
    expirer.observe({ type: "ADDED", object: wrap("event", event("gone", 2)) }, true);
    expirer.observe({ type: "DELETED", object: wrap("event", event("deleted", 3)) }, true);
    assert.equal(expirer.size, 1);
    advance(HOUR);
    assert.equal(await expirer.sweep(), 0);
    assert.equal(expirer.size, 0);
  });

  it("a failing store fails the sweep and keeps what was due for the next one", async () => {
    let down = true;
    const { expirer, advance } = setup(() => {
      if (down) throw new Error("redis down");
    });
    expirer.observe({ type: "ADDED", object: wrap("event", event("e", 1)) }, true);
    advance(HOUR);
    await assert.rejects(expirer.sweep(), /redis down/);
    assert.equal(expirer.size, 1);
    down = false;
    assert.equal(await expirer.sweep(), 1);
  });
});
