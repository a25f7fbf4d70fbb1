// test-tier: servers
// The api's LogsHandler against a real stack, with the node agent's LogServer
// (over a runtime double) on the same nats-server.
import assert from "node:assert/strict";
import { after, before, describe, it } from "node:test";
import { ApiError, unwrap } from "@choreo/kit";
import { createInbox } from "@nats-io/transport-node";
import { agentLogsSubject, STREAM_INBOX_HEADER, StreamFrame, streamFrameHeaders } from "@choreo/kit/bus";
import { fromKubeJson } from "@choreo/kit/kube-json";
import type { Pod } from "@choreo/kit/gen/choreo/core/v1/core";
import { silentLogger } from "@choreo/kit/log";
import { waitFor } from "@choreo/kit/testing";
import { LogServer } from "@choreo/node-agent/logs";
import { FakeLogRuntime } from "@choreo/node-agent/logs/testing";
import { startStack, type Stack } from "../testing/stack.js";
import { NatsLogs, type PodLogQuery } from "./nats-logs.js";

const NODE = "node-a";

async function createPod(s: Stack, name: string, containers: string[], node?: string): Promise<Pod> {
  const obj = await s.client.create(
    fromKubeJson({
      apiVersion: "v1",
      kind: "Pod",
      metadata: { name, namespace: "default" },
      spec: { ...(node ? { nodeName: node } : {}), containers: containers.map((c) => ({ name: c, image: "busybox" })) },
    }),
  );
  return unwrap(obj) as Pod;
}

function query(name: string, q: Partial<PodLogQuery> = {}): PodLogQuery {
  return { namespace: "default", name, follow: false, timestamps: false, previous: false, ...q };
}

async function collect(it: AsyncIterable<string>): Promise<string> {
  let out = "";
  for await (const s of it) out += s;
  return out;
}

async function rejectsWith(p: Promise<unknown>, code: number, message: string | RegExp): Promise<void> {
  await assert.rejects(p, (err: unknown) => {
    assert.ok(err instanceof ApiError, String(err));
    assert.equal(err.code, code);
    if (typeof message === "string") assert.equal(err.message, message);
    else assert.match(err.message, message);
    return true;
  });
}

describe("NatsLogs", () => {
  let s: Stack;
  let logs: NatsLogs;
  let runtime: FakeLogRuntime;
  const ac = new AbortController();
  let served: Promise<void>;

  before(async () => {
    s = await startStack();
    // Short enough that "stopped answering" is quick to prove, long enough that a loaded machine's
    // event-loop stalls (CI at load 20 stalled a large relay past 500 ms) are not taken for a silent agent.
    logs = new NatsLogs({ nc: s.nc, handlers: s.registry, log: silentLogger(), requestTimeoutMs: 3_000, stream: { heartbeatMs: 250, idleTimeoutMs: 3_000 } });
    const web = await createPod(s, "web", ["app"], NODE);
    await createPod(s, "two", ["a", "b"], NODE);
    await createPod(s, "pending", ["app"]);
    await createPod(s, "lost", ["app"], "node-gone");
    runtime = new FakeLogRuntime(web.metadata?.uid ?? "", ["app"]);
    runtime.write("app", "hello", "world");
    served = new LogServer({ nc: s.nc, node: NODE, runtime, pods: new Map(), log: silentLogger() }).start(ac.signal);
    await waitFor(async () => (await collect(logs.logs(query("web"), new AbortController().signal)).catch(() => "")) !== "");
  });
  after(async () => {
    ac.abort();
    await served;
    await s.stop();
  });

  it("streams a one-container pod's log with the container defaulted", async () => {
    assert.equal(await collect(logs.logs(query("web"), new AbortController().signal)), "hello\nworld\n");
    assert.equal(runtime.calls.at(-1)?.opts.container, "app");
    assert.equal(
      await collect(logs.logs(query("web", { container: "app", tailLines: 1, timestamps: true }), new AbortController().signal)),
      "2026-01-01T00:00:00Z world\n",
    );
  });

  it("follows until the client leaves, then the agent stops reading", async () => {
    const client = new AbortController();
    const it = logs.logs(query("web", { follow: true, tailLines: 0 }), client.signal)[Symbol.asyncIterator]();
    assert.deepEqual(await it.next(), { done: false, value: "" }, "headers go out before the first line");
    const call = await waitFor(async () => runtime.calls.find((c) => c.opts.follow && !c.ended));
    runtime.write("app", "later");
    assert.deepEqual(await it.next(), { done: false, value: "later\n" });
    client.abort();
    await it.return?.();
    await waitFor(async () => call.ended);
  });

  it("refuses what Kubernetes refuses", async () => {
    const signal = new AbortController().signal;
    await rejectsWith(collect(logs.logs(query("nope"), signal)), 404, `pods "nope" not found`);
    await rejectsWith(collect(logs.logs(query("two"), signal)), 400, "a container name must be specified for pod two, choose one of: [a b]");
    await rejectsWith(collect(logs.logs(query("web", { container: "x" }), signal)), 400, "container x is not valid for pod web");
    await rejectsWith(collect(logs.logs(query("pending"), signal)), 400, "pod pending does not have a host assigned");
    await rejectsWith(collect(logs.logs(query("web", { tailLines: -1 }), signal)), 400, /tailLines/);
  });

  it("passes the agent's errors on", async () => {
    await rejectsWith(collect(logs.logs(query("web", { previous: true }), new AbortController().signal)), 400, /previous terminated container "app"/);
  });

  it("answers 503 when the node has no agent, or its agent goes silent", async () => {
    await rejectsWith(collect(logs.logs(query("lost"), new AbortController().signal)), 503, "node agent for node node-gone is not answering");
    // An agent that acks (naming an inbox nobody reads) and then says nothing more.
    const sub = s.nc.subscribe(agentLogsSubject("node-gone"), {
      callback: (_e, m) => {
        const ack = streamFrameHeaders(StreamFrame.Ack);
        ack.set(STREAM_INBOX_HEADER, createInbox());
        m.respond(new Uint8Array(), { headers: ack });
      },
    });
    try {
      await rejectsWith(
        collect(logs.logs(query("lost", { follow: true }), new AbortController().signal)),
        503,
        "node agent for node node-gone stopped answering",
      );
    } finally {
      sub.unsubscribe();
    }
  });

  it("ends a follower with a 503 when its agent stops mid-stream", async () => {
    const far = await createPod(s, "far", ["app"], "node-b");
    const other = new FakeLogRuntime(far.metadata?.uid ?? "", ["app"]);
    other.write("app", "first");
    const own = new AbortController();
    const done = new LogServer({ nc: s.nc, node: "node-b", runtime: other, pods: new Map(), log: silentLogger() }).start(own.signal);
    const it = await waitFor(async () => {
      const i = logs.logs(query("far", { follow: true }), new AbortController().signal)[Symbol.asyncIterator]();
      const first = await i.next().catch(() => undefined);
      return first?.value === "" ? i : undefined;
    });
    assert.deepEqual(await it.next(), { done: false, value: "first\n" });
    own.abort();
    await done;
    await rejectsWith(it.next(), 503, "node agent for node node-b is stopping");
    await waitFor(async () => other.calls.length > 0 && other.calls.every((c) => c.ended));
  });

  it("relays a large log intact, across chunk and credit boundaries", async () => {
    const lines = Array.from({ length: 150_000 }, (_, i) => `ligne ${i} café 🚀`);
    for (let i = 0; i < lines.length; i += 10_000) runtime.write("app", ...lines.slice(i, i + 10_000));
    const got = await collect(logs.logs(query("web", { tailLines: lines.length }), new AbortController().signal));
    assert.equal(got.length, lines.join("\n").length + 1);
    assert.equal(got, `${lines.join("\n")}\n`);
  });
});
