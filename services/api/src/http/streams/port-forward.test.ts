import assert from "node:assert/strict";
import { Duplex, PassThrough } from "node:stream";
import { describe, it } from "node:test";
import { ApiError, failure } from "@choreo/kit";
import { silentLogger } from "@choreo/kit/log";
import { waitFor } from "@choreo/kit/testing";
import { forwardPorts, servePortForward } from "./port-forward.js";
import { dataFrame, FrameReader, FrameWriter, pingFrame, type SpdyFrame } from "./spdy/framer.js";

/** A client and a server end joined back to back. */
function pipePair(): { client: Duplex; server: Duplex } {
  const toServer = new PassThrough();
  const toClient = new PassThrough();
  return { client: Duplex.from({ readable: toClient, writable: toServer }), server: Duplex.from({ readable: toServer, writable: toClient }) };
}

/** Starts a port-forward session whose agent refuses every connection; returns the client side's frames and writer. */
function session(refusal: Error = new Error("error forwarding port 81 to pod default/web, uid u1: connect ECONNREFUSED 10.0.0.5:81")) {
  const { client, server } = pipePair();
  const asked: number[] = [];
  const ac = new AbortController();
  const done = servePortForward(server, {
    streams: {
      openForward: (_q, _t, port) => {
        asked.push(port);
        return Promise.reject(refusal);
      },
    },
    q: { namespace: "default", name: "web" },
    target: { node: "n1", uid: "u1" },
    log: silentLogger(),
    signal: ac.signal,
  });
  const frames: SpdyFrame[] = [];
  void (async () => {
    for await (const f of new FrameReader(client).frames()) frames.push(f);
  })().catch(() => undefined);
  const w = new FrameWriter();
  return { client, frames, w, asked, done, stop: () => ac.abort() };
}

const pair = (id: number, requestId: string, port: string, type: "error" | "data"): [string, string][] => [
  ["streamtype", type],
  ["port", port],
  ["requestid", requestId],
];

describe("pods/portforward over SPDY", () => {
  it("pairs kubectl's error and data streams by requestid; a refused connection's reason is written on the error stream, then both close", async () => {
    const s = session();
    s.client.write(await s.w.synStream(1, pair(1, "0", "81", "error")));
    s.client.write(dataFrame(1, Buffer.alloc(0), true));
    s.client.write(await s.w.synStream(3, pair(3, "0", "81", "data")));
    await waitFor(() => s.frames.filter((f) => f.type === "data" && f.fin).length === 2, { timeoutMs: 5_000, message: "both streams closed" });
    assert.deepEqual(
      s.frames.filter((f) => f.type === "syn_reply").map((f) => (f.type === "syn_reply" ? f.streamId : 0)),
      [1, 3],
      "every stream is replied to",
    );
    const text = s.frames.map((f) => (f.type === "data" && f.streamId === 1 ? f.data.toString() : "")).join("");
    assert.match(text, /error forwarding port 81 to pod default\/web.*ECONNREFUSED/);
    assert.deepEqual(s.asked, [81], "the agent was asked once, for the stream's port");
    s.stop();
    await s.done;
  });

  it("refuses streams it cannot use (no requestid, unknown type), a bad port, and answers pings", async () => {
    const s = session();
    s.client.write(await s.w.synStream(1, [["streamtype", "data"]]));
    s.client.write(
      await s.w.synStream(3, [
        ["streamtype", "stdin"],
        ["requestid", "1"],
      ]),
    );
    s.client.write(await s.w.synStream(5, pair(5, "2", "http", "error")));
    s.client.write(await s.w.synStream(7, pair(7, "2", "http", "data")));
    s.client.write(pingFrame(9));
    await waitFor(() => s.frames.some((f) => f.type === "data" && f.streamId === 5 && f.data.length > 0) && s.frames.some((f) => f.type === "ping"), {
      timeoutMs: 5_000,
      message: "the bad port's error and the ping's echo",
    });
    assert.deepEqual(
      s.frames.filter((f) => f.type === "rst_stream").map((f) => (f.type === "rst_stream" ? f.streamId : 0)),
      [1, 3],
    );
    const err = s.frames.find((f) => f.type === "data" && f.streamId === 5);
    assert.ok(err?.type === "data");
    assert.match(err.data.toString(), /invalid port "http"/);
    assert.deepEqual(s.asked, [], "nothing was asked of the agent");
    s.stop();
    await s.done;
  });

  it("a frame of another SPDY version ends the session with a GOAWAY and nothing asked", async () => {
    const s = session();
    const v2 = pingFrame(1);
    v2.writeUInt16BE(0x8002, 0);
    s.client.write(v2);
    await s.done;
    await waitFor(() => s.frames.some((f) => f.type === "goaway"), { timeoutMs: 5_000, message: "a GOAWAY" });
    assert.deepEqual(s.asked, []);
  });

  it("a failure's Status message is what kubectl prints", async () => {
    const s = session(new ApiError(failure(503, "ServiceUnavailable", "node agent for node n1 is not answering")));
    s.client.write(await s.w.synStream(1, pair(1, "0", "80", "error")));
    s.client.write(await s.w.synStream(3, pair(3, "0", "80", "data")));
    await waitFor(() => s.frames.some((f) => f.type === "data" && f.streamId === 1 && f.data.length > 0), { timeoutMs: 5_000, message: "the error" });
    const err = s.frames.find((f) => f.type === "data" && f.streamId === 1);
    assert.ok(err?.type === "data");
    assert.equal(err.data.toString(), "node agent for node n1 is not answering");
    s.stop();
    await s.done;
  });
});

describe("pods/portforward ports of the channel protocol", () => {
  it("reads ports repeated or comma-separated, and refuses none, 0, 65536 and words with a 400", () => {
    const url = (q: string) => new URL(`http://x/api/v1/namespaces/d/pods/p/portforward?${q}`);
    assert.deepEqual(forwardPorts(url("ports=80&ports=8080,9090")), [80, 8080, 9090]);
    for (const bad of ["", "ports=0", "ports=65536", "ports=http", "ports=80,"]) {
      assert.throws(
        () => forwardPorts(url(bad)),
        (err: unknown) => err instanceof ApiError && err.status.code === 400,
        bad,
      );
    }
  });
});
