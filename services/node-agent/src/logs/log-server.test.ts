// test-tier: servers
// The agent's half of the log protocol, spoken to by hand over a real nats-server.
import assert from "node:assert/strict";
import { after, before, describe, it } from "node:test";
import { createInbox, type Msg, type NatsConnection, type Subscription } from "@nats-io/transport-node";
import { Status } from "@choreo/kit/gen/choreo/meta/v1/meta";
import type { Pod } from "@choreo/kit/gen/choreo/core/v1/core";
import { PodLogRequest, type PodLogOptions } from "@choreo/kit/gen/choreo/node/v1/logs";
import {
  agentLogsSubject,
  connectBus,
  LOG_CHANNEL,
  STREAM_CHANNEL_HEADER,
  STREAM_INBOX_HEADER,
  StreamFrame,
  streamFrameHeaders,
  streamFrameOf,
} from "@choreo/kit/bus";
import { silentLogger } from "@choreo/kit/log";
import { startNats, waitFor, type ServerHandle } from "@choreo/kit/testing";
import { LogServer } from "./log-server.js";
import { FakeLogRuntime } from "./testing.js";

const NODE = "node-1";
const UID = "uid-1";

/** The api's side of one bus stream, by hand: the reply, then frames (data inbox) and control (credit) as they come. */
class RawStream {
  reply: Msg | undefined;
  private constructor(
    private readonly nc: NatsConnection,
    readonly inbox: string,
    private readonly subs: Subscription[],
    readonly frames: Msg[],
    readonly ctl: Msg[],
  ) {}

  static async open(nc: NatsConnection, options: Partial<PodLogOptions>, node = NODE): Promise<RawStream> {
    const inbox = createInbox();
    const frames: Msg[] = [];
    const ctl: Msg[] = [];
    const subs = [nc.subscribe(inbox, { callback: (_e, m) => void frames.push(m) }), nc.subscribe(`${inbox}.ctl`, { callback: (_e, m) => void ctl.push(m) })];
    const s: RawStream = new RawStream(nc, inbox, subs, frames, ctl);
    const opts: PodLogOptions = { namespace: "default", name: "web", uid: UID, container: "c", follow: false, timestamps: false, previous: false, ...options };
    s.reply = await nc.request(agentLogsSubject(node), PodLogRequest.encode({ options: opts, inbox }).finish(), { timeout: 5_000 });
    return s;
  }

  /** The agent's inbox, from its ack. */
  get remote(): string {
    return this.reply?.headers?.get(STREAM_INBOX_HEADER) ?? "";
  }

  data(): Msg[] {
    return this.frames.filter((m) => streamFrameOf(m) === StreamFrame.Data);
  }

  text(): string {
    return this.data()
      .map((m) => Buffer.from(m.data).toString())
      .join("");
  }

  kinds(): string[] {
    return this.frames.map((m) => streamFrameOf(m) ?? "?");
  }

  /** The Status the stream ended with, if it ended with one. */
  endStatus(): Status | undefined {
    const end = this.frames.find((m) => streamFrameOf(m) === StreamFrame.End);
    return end && end.data.length > 0 ? Status.decode(end.data) : undefined;
  }

  credit(consumed: number): void {
    this.nc.publish(`${this.remote}.ctl`, String(consumed), { headers: streamFrameHeaders(StreamFrame.Credit) });
  }

  cancel(): void {
    this.nc.publish(`${this.remote}.ctl`, new Uint8Array(), { headers: streamFrameHeaders(StreamFrame.Abort) });
  }

  close(): void {
    for (const sub of this.subs) sub.unsubscribe();
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
    const server = new LogServer({ nc, node: NODE, runtime, pods: cache, log: silentLogger(), stream: { heartbeatMs: 100, idleTimeoutMs: 60_000, window: 2 } });
    running = server.start(ac.signal);
    const silent = new LogServer({ nc, node: "node-silent", runtime, pods: cache, log: silentLogger(), stream: { heartbeatMs: 100, idleTimeoutMs: 300 } });
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

  it("acks with its inbox, streams the log on the log channel and ends it", async () => {
    const s = await RawStream.open(nc, {});
    assert.equal(streamFrameOf(s.reply!), StreamFrame.Ack);
    assert.ok(s.remote);
    await waitFor(async () => s.kinds().includes(StreamFrame.End));
    assert.equal(s.text(), "one\ntwo\nthree\n");
    assert.deepEqual(s.kinds(), [StreamFrame.Data, StreamFrame.End]);
    assert.equal(s.data()[0]?.headers?.get(STREAM_CHANNEL_HEADER), String(LOG_CHANNEL));
    assert.equal(s.endStatus(), undefined);
    s.close();
  });

  it("passes tailLines and timestamps to the runtime", async () => {
    const s = await RawStream.open(nc, { tailLines: 1, timestamps: true });
    await waitFor(async () => s.kinds().includes(StreamFrame.End));
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
      assert.equal(streamFrameOf(s.reply!), StreamFrame.Error);
      const st = Status.decode(s.reply!.data);
      assert.equal(st.code, code);
      assert.equal(st.reason, reason);
      assert.match(st.message, message);
      s.close();
    }
  });

  it("follows new lines within the credit the api reports, and stops on cancel", async () => {
    const s = await RawStream.open(nc, { container: "d", follow: true });
    assert.equal(streamFrameOf(s.reply!), StreamFrame.Ack);
    for (const l of ["a", "b", "c"]) {
      runtime.write("d", l);
      await waitFor(async () => s.text().includes(l) || s.data().length >= 2);
    }
    // The window is 2 frames: the third waits until the api reports what it consumed.
    assert.equal(s.text(), "a\nb\n");
    s.credit(2);
    await waitFor(async () => s.text() === "a\nb\nc\n");
    const call = runtime.calls.at(-1)!;
    assert.equal(call.ended, false);
    s.cancel();
    await waitFor(async () => call.ended);
    assert.deepEqual(s.kinds(), [StreamFrame.Data, StreamFrame.Data, StreamFrame.Data]);
    s.close();
  });

  it("sends heartbeats while idle and stops a follower whose api went silent", async () => {
    const s = await RawStream.open(nc, { container: "d", follow: true }, "node-silent");
    const call = runtime.calls.at(-1)!;
    // Credit is the heartbeat: the agent reports it on the api's control subject.
    await waitFor(async () => s.ctl.some((m) => streamFrameOf(m) === StreamFrame.Credit));
    await waitFor(async () => call.ended);
    s.close();
  });

  it("ends open streams with a 503 when the agent stops, also one waiting for credit", async () => {
    const own = new AbortController();
    const other = new FakeLogRuntime(UID, ["c", "d"]);
    other.write("d", "x", "y");
    const server = new LogServer({
      nc,
      node: "node-2",
      runtime: other,
      pods: new Map(),
      log: silentLogger(),
      stream: { heartbeatMs: 100, idleTimeoutMs: 60_000, window: 1 },
    });
    const done = server.start(own.signal);
    const open = async (container: string): Promise<RawStream> =>
      waitFor(async () => {
        const s = await RawStream.open(nc, { container, follow: true }, "node-2").catch(() => undefined);
        return s && streamFrameOf(s.reply!) === StreamFrame.Ack ? s : undefined;
      });
    const idle = await open("c");
    // Two chunks through a window of one, never credited: the second send waits.
    const blocked = await open("d");
    await waitFor(async () => blocked.data().length === 1);
    other.write("d", "z");
    await waitFor(async () => other.calls.filter((c) => !c.ended).length === 2);
    own.abort();
    await done;
    for (const s of [idle, blocked]) {
      await waitFor(async () => s.kinds().includes(StreamFrame.End));
      assert.equal(s.endStatus()?.code, 503);
      assert.equal(s.endStatus()?.message, "node agent for node node-2 is stopping");
      s.close();
    }
    await waitFor(async () => other.calls.every((c) => c.ended));
  });
});
