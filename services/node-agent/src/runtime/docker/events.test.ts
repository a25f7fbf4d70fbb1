import assert from "node:assert/strict";
import { PassThrough } from "node:stream";
import { describe, it } from "node:test";
import type Dockerode from "dockerode";
import { silentLogger } from "@choreo/kit/log";
import { waitFor } from "@choreo/kit/testing";
import { EventFollower, type ContainerEvent } from "./events.js";

describe("EventFollower", () => {
  it("parses events split across chunks, and reconnects (telling the runtime) when the stream ends", async () => {
    const streams: PassThrough[] = [];
    const filters: string[] = [];
    const fake = {
      getEvents: async (o: { filters: string }) => {
        filters.push(o.filters);
        const s = new PassThrough();
        streams.push(s);
        return s;
      },
    };
    const seen: ContainerEvent[] = [];
    let reconnects = 0;
    // Only getEvents is used: a stand-in for the engine.
    const f = new EventFollower(fake as unknown as Dockerode, "n1", { onEvent: (e) => seen.push(e), onReconnect: () => reconnects++ }, silentLogger(), 10);
    await f.start();
    assert.deepEqual(JSON.parse(filters[0]!), { type: ["container"], event: ["start", "die", "oom", "destroy"], label: ["dev.choreo.node=n1"] });
    const line = JSON.stringify({ Type: "container", Action: "die", Actor: { ID: "c1", Attributes: { a: "b" } } });
    streams[0]!.write(line.slice(0, 10));
    streams[0]!.write(`${line.slice(10)}\nnot json\n`);
    await waitFor(() => seen.length === 1);
    assert.deepEqual(seen[0], { action: "die", id: "c1", labels: { a: "b" } });
    streams[0]!.end();
    await waitFor(() => reconnects === 1 && streams.length === 2, { message: "reconnected" });
    streams[1]!.write(`${JSON.stringify({ Action: "start", Actor: { ID: "c2" } })}\n`);
    await waitFor(() => seen.length === 2);
    f.stop();
    assert.ok(streams[1]!.destroyed);
  });
});
