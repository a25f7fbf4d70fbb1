// test-tier: servers
// The agent's half of the log protocol, spoken to by hand over a real nats-server.
import assert from "node:assert/strict";
import { after, before, describe, it } from "node:test";
import { createInbox, type Msg, type NatsConnection, type Subscription } from "@nats-io/transport-node";
import { Status } from "@choreo/kit/gen/choreo/meta/v1/meta";
import type { Pod } from "@choreo/kit/gen/choreo/core/v1/core";
import { PodLogRequest, type PodLogOptions } from "@choreo/kit/gen/choreo/node/v1/logs";
import { agentLogsSubject, connectBus, LogFrame, logCancelSubject, logFrameOf, logHeartbeatSubject } from "@choreo/kit/bus";
import { silentLogger } from "@choreo/kit/log";
import { startNats, waitFor, type ServerHandle } from "@choreo/kit/testing";
import { LogServer } from "./log-server.js";
import { FakeLogRuntime } from "./testing.js";

const NODE = "node-1";
const UID = "uid-1";

/** The api's side of one stream, by hand: the reply, then frames as they come. */
class RawStream {
  reply: Msg | undefined;
  private constructor(
    private readonly nc: NatsConnection,
    readonly inbox: string,
    private readonly sub: Subscription,
    readonly frames: Msg[],
  ) {}

  static async open(nc: NatsConnection, options: Partial<PodLogOptions>, node = NODE): Promise<RawStream> {
    const inbox = createInbox();
    const frames: Msg[] = [];
    const s: RawStream = new RawStream(nc, inbox, nc.subscribe(inbox, { callback: (_e, m) => void frames.push(m) }), frames);
    const opts: PodLogOptions = { namespace: "default", name: "web", uid: UID, container: "c", follow: false, timestamps: false, previous: false, ...options };
    s.reply = await nc.request(agentLogsSubject(node), PodLogRequest.encode({ options: opts, inbox }).finish(), { timeout: 5_000 });
    return s;
  }

  text(): string {
    return this.frames
      .filter((m) => logFrameOf(m) === LogFrame.Data)
      .map((m) => Buffer.from(m.data).toString())
      .join("");
  }

  kinds(): string[] {
    return this.frames.map((m) => logFrameOf(m) ?? "?").filter((k) => k !== LogFrame.Heartbeat);
  }

  heartbeat(consumed: number): void {
    this.nc.publish(logHeartbeatSubject(this.inbox), String(consumed));
  }

  cancel(): void {
    this.nc.publish(logCancelSubject(this.inbox));
  }

  close(): void {
    this.sub.unsubscribe();
  }
}

function pod(uid: string): Pod {
  return { metadata: { namespace: "default", name: "web", uid } } as Pod;
}

describe("LogServer", () => {
  let nats: ServerHandle;
  let nc: NatsConnection;
  let runtime: FakeLogRuntime;
  const ac = new AbortController();
  let running: Promise<void>;
  let stopped: Promise<void>;
  const cache = new Map<string, Pod>([["default/web", pod(UID)]]);

  before(async () => {
    nats = await startNats();
    nc = await connectBus(nats.url, "log-server-test");
    runtime = new FakeLogRuntime(UID, ["c", "d"]);
    runtime.write("c", "one", "two", "three");
    const server = new LogServer({ nc, node: NODE, runtime, pods: cache, log: silentLogger(), heartbeatMs: 100, idleTimeoutMs: 60_000, window: 2 });
    running = server.start(ac.signal);
    const silent = new LogServer({ nc, node: "node-silent", runtime, pods: cache, log: silentLogger(), heartbeatMs: 100, idleTimeoutMs: 300 });
    stopped = silent.start(ac.signal);
    await waitFor(async () => {
      try {
        await RawStream.open(nc, {});
        return true;
      } catch {
        return false;
      }
    });
  });
  after(async () => {
    ac.abort();
    await Promise.all([running, stopped]);
    await nc.close();
    await nats.stop();
  });

  it("acks, streams the log and ends it", async () => {
    const s = await RawStream.open(nc, {});
    assert.equal(logFrameOf(s.reply!), LogFrame.Ack);
    await waitFor(async () => s.kinds().includes(LogFrame.End));
    assert.equal(s.text(), "one\ntwo\nthree\n");
    assert.deepEqual(s.kinds(), [LogFrame.Data, LogFrame.End]);
    s.close();
  });

  it("passes tailLines and timestamps to the runtime", async () => {
    const s = await RawStream.open(nc, { tailLines: 1, timestamps: true });
    await waitFor(async () => s.kinds().includes(LogFrame.End));
    assert.equal(s.text(), "2026-01-01T00:00:00Z three\n");
    assert.equal(runtime.calls.at(-1)?.opts.tailLines, 1);
    s.close();
  });

  it("answers runtime request errors as 400 and another incarnation as 404", async () => {
    for (const [options, code, reason, message] of [
      [{ container: "x" }, 400, "BadRequest", /container "x"/],
      [{ previous: true }, 400, "BadRequest", /previous terminated container "c"/],
      [{ uid: "other" }, 404, "NotFound", /pods "web" not found/],
    ] as const) {
      const s = await RawStream.open(nc, options);
      assert.equal(logFrameOf(s.reply!), LogFrame.Error);
      const st = Status.decode(s.reply!.data);
      assert.equal(st.code, code);
      assert.equal(st.reason, reason);
      assert.match(st.message, message);
      s.close();
    }
  });

  it("follows new lines within the credit the api reports, and stops on cancel", async () => {
    const s = await RawStream.open(nc, { container: "d", follow: true });
    assert.equal(logFrameOf(s.reply!), LogFrame.Ack);
    for (const l of ["a", "b", "c"]) {
      runtime.write("d", l);
      await waitFor(async () => s.text().includes(l) || s.frames.filter((m) => logFrameOf(m) === LogFrame.Data).length >= 2);
    }
    // The window is 2 frames: the third waits until the api reports what it consumed.
    assert.equal(s.text(), "a\nb\n");
    s.heartbeat(2);
    await waitFor(async () => s.text() === "a\nb\nc\n");
    const call = runtime.calls.at(-1)!;
    assert.equal(call.ended, false);
    s.cancel();
    await waitFor(async () => call.ended);
    assert.deepEqual(s.kinds(), [LogFrame.Data, LogFrame.Data, LogFrame.Data]);
    s.close();
  });

  it("sends heartbeats while idle and stops a follower whose api went silent", async () => {
    const s = await RawStream.open(nc, { container: "d", follow: true }, "node-silent");
    const call = runtime.calls.at(-1)!;
    await waitFor(async () => s.frames.some((m) => logFrameOf(m) === LogFrame.Heartbeat));
    await waitFor(async () => call.ended);
    s.close();
  });

  it("ends open streams with an error frame when the agent stops", async () => {
    const own = new AbortController();
    const other = new FakeLogRuntime(UID, ["c"]);
    const server = new LogServer({ nc, node: "node-2", runtime: other, pods: new Map(), log: silentLogger(), heartbeatMs: 100, idleTimeoutMs: 60_000 });
    const done = server.start(own.signal);
    const inbox = createInbox();
    const frames: Msg[] = [];
    const sub = nc.subscribe(inbox, { callback: (_e, m) => void frames.push(m) });
    await waitFor(async () => {
      try {
        const opts = { namespace: "default", name: "web", uid: UID, container: "c", follow: true, timestamps: false, previous: false };
        const r = await nc.request(agentLogsSubject("node-2"), PodLogRequest.encode({ options: opts, inbox }).finish(), { timeout: 1_000 });
        return logFrameOf(r) === LogFrame.Ack;
      } catch {
        return false;
      }
    });
    own.abort();
    await done;
    await waitFor(async () => frames.some((m) => logFrameOf(m) === LogFrame.Error));
    const st = Status.decode(frames.find((m) => logFrameOf(m) === LogFrame.Error)!.data);
    assert.equal(st.code, 503);
    sub.unsubscribe();
  });
});
