// test-tier: servers
// Events expire on the real api (registry, relay, watch cache over
// nats-server and redis-server): Events there before the expirer starts (a
// restart) and Events written after all go a TTL after their last write,
// each as a DELETED on the revision line that a watcher sees, and nothing of
// them stays in Redis; an Event written again lives a TTL past that write.
import assert from "node:assert/strict";
import { after, before, describe, it } from "node:test";
import { emptyMeta, unwrap, wrap } from "@choreo/kit";
import { silentLogger } from "@choreo/kit/log";
import { waitFor } from "@choreo/kit/testing";
import { Event } from "@choreo/kit/gen/choreo/core/v1/core";
import { WatchRequest } from "@choreo/kit/gen/choreo/api/v1/api";
import { objectKeyPrefix } from "../storage/keys.js";
import { startStack, type Stack } from "../testing/stack.js";
import { EventExpirer } from "./expirer.js";

const TTL = 3_000;

function event(name: string, count = 1): Event {
  return Event.fromPartial({
    metadata: emptyMeta({ namespace: "default", name }),
    involvedObject: { kind: "Pod", apiVersion: "v1", namespace: "default", name: "p", uid: "u", resourceVersion: "", fieldPath: "" },
    reason: "Tested",
    message: "an event",
    type: "Normal",
    count,
    source: { component: "expirer-test", host: "" },
  });
}

describe("event TTL on the real api", () => {
  let stack: Stack;
  const ac = new AbortController();
  let running: Promise<void> | undefined;
  /** name → when the watcher saw it DELETED (this clock). */
  const deletedAt = new Map<string, number>();
  let watching: Promise<void> | undefined;

  before(async () => {
    stack = await startStack();
    const from = (await stack.client.list("events")).metadata?.resourceVersion ?? "";
    watching = (async () => {
      for await (const ev of stack.registry.watch(WatchRequest.fromPartial({ resource: "events", resourceVersion: from }), ac.signal))
        if (ev.type === "DELETED" && ev.object) deletedAt.set(unwrap(ev.object).metadata?.name ?? "", Date.now());
    })().catch(() => undefined);
  });
  after(async () => {
    ac.abort();
    await running;
    await watching;
    await stack?.stop();
  });

  const redisEventKeys = async () => (await stack.redisClient.keys(`${objectKeyPrefix("events")}*`)).length;

  it("Events there before it starts and Events written after expire a TTL after their last write, as DELETEs every watcher sees", async () => {
    const before: string[] = [];
    // Each bound below is taken before the write it bounds: the expiry counts from the write (or later).
    const t0 = Date.now();
    for (let i = 0; i < 40; i++) {
      before.push(`before-${i}`);
      await stack.client.create(wrap("event", event(`before-${i}`)));
    }
    assert.ok((await redisEventKeys()) >= 40);
    const expirer = new EventExpirer({ handlers: stack.registry, ttlMs: TTL, sweepMs: 200, log: silentLogger() });
    running = expirer.start(ac.signal);
    const createdAfter = Date.now();
    await stack.client.create(wrap("event", event("after")));
    // Written again and again for a while: lives a TTL past the last write.
    let last = 0;
    for (let count = 2; count <= 6; count++) {
      const cur = unwrap(await stack.client.get("events", "default", "bumped").catch(() => stack.client.create(wrap("event", event("bumped"))))) as Event;
      last = Date.now();
      await stack.client.update(wrap("event", { ...cur, count }));
      await new Promise((r) => setTimeout(r, 400));
    }

    await waitFor(() => [...before, "after", "bumped"].every((n) => deletedAt.has(n)) || undefined, { timeoutMs: 60_000, message: "every Event expired" });
    // creationTimestamp has whole seconds: a listed Event's write may count from up to 1 s before it.
    for (const n of before) assert.ok(deletedAt.get(n)! >= t0 - 1_000 + TTL, `${n} lived its TTL`);
    assert.ok(deletedAt.get("after")! >= createdAfter + TTL, "a new Event lives its TTL");
    assert.ok(deletedAt.get("bumped")! >= last + TTL, "an Event written again lives a TTL past its last write");
    assert.equal((await stack.client.list("events")).items.length, 0);
    assert.equal(await redisEventKeys(), 0, "nothing of them left in Redis");
    assert.ok(expirer.stats.expired >= 42);
  });
});
