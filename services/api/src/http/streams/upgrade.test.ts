// The gateway's upgrade path for pods/exec and pods/attach, against a real
// HTTP server and a real WebSocket client: what is refused before the
// upgrade (as HTTP Status responses), and a session whose node agent does
// not answer (a Status on the error channel, then a normal close).
import assert from "node:assert/strict";
import http from "node:http";
import { after, before, describe, it } from "node:test";
import type { NatsConnection } from "@nats-io/transport-node";
import { unavailable } from "@choreo/kit";
import type { BusStream } from "@choreo/kit/bus";
import WebSocket from "ws";
import { startTestGateway, type TestGateway } from "../testing/harness.js";
import { NatsPodStreams, type PodStreamQuery, type PodStreamTarget } from "./pod-streams.js";
import { CHANNEL_PROTOCOLS, Channel } from "./upgrade.js";

const PODS = "/api/v1/namespaces/default/pods";

/** Resolves as the api does; opening always fails as when the node has no agent. */
class NoAgent extends NatsPodStreams {
  opened: PodStreamQuery[] = [];
  override async open(q: PodStreamQuery, target: PodStreamTarget): Promise<BusStream> {
    this.opened.push(q);
    throw unavailable(`node agent for node ${target.node} is not answering`);
  }
}

/** The answer to a WebSocket handshake the server refused: its code and Status body. */
function refused(
  url: string,
  protocols: string[] = [...CHANNEL_PROTOCOLS],
  headers: Record<string, string> = {},
): Promise<{ code: number; body: Record<string, unknown> }> {
  return new Promise((resolve, reject) => {
    const ws = new WebSocket(url, protocols, { headers });
    ws.on("open", () => reject(new Error("the upgrade was accepted")));
    ws.on("error", () => undefined);
    ws.on("unexpected-response", (_req, res) => {
      let text = "";
      res.on("data", (b: Buffer) => (text += b.toString()));
      res.on("end", () => resolve({ code: res.statusCode ?? 0, body: JSON.parse(text) as Record<string, unknown> }));
    });
  });
}

describe("pods/exec and pods/attach upgrades", () => {
  let t: TestGateway;
  let ws: string;
  const streams = new NoAgent({
    // resolve() reads pods through the handlers only; open() is overridden: no NATS connection is used.
    nc: {} as unknown as NatsConnection,
    handlers: { get: (req) => t.handlers.get(req) },
  });

  before(async () => {
    t = await startTestGateway({ streams });
    ws = t.base.replace(/^http/, "ws");
    const body = (name: string, containers: string[], phase?: string) => ({
      apiVersion: "v1",
      kind: "Pod",
      metadata: { name },
      spec: { nodeName: "n1", containers: containers.map((c) => ({ name: c, image: "busybox" })) },
      ...(phase ? { status: { phase } } : {}),
    });
    for (const [name, containers] of [
      ["one", ["main"]],
      ["two", ["a", "b"]],
    ] as const) {
      const r = await t.call("POST", PODS, { body: body(name, [...containers]) });
      assert.equal(r.status, 201, JSON.stringify(r.json));
    }
  });
  after(() => t.close());

  it("refuses before upgrading, with Kubernetes' Status: missing pod, unnamed or unknown container, no command, no stream", async () => {
    const missing = await refused(`${ws}${PODS}/nope/exec?command=true&stdout=true`);
    assert.equal(missing.code, 404);
    assert.equal(missing.body["reason"], "NotFound");
    assert.equal(missing.body["message"], 'pods "nope" not found');
    const unnamed = await refused(`${ws}${PODS}/two/exec?command=true&stdout=true`);
    assert.equal(unnamed.code, 400);
    assert.match(String(unnamed.body["message"]), /a container name must be specified for pod two, choose one of: \[a b\]/);
    const unknown = await refused(`${ws}${PODS}/one/exec?command=true&stdout=true&container=x`);
    assert.equal(unknown.code, 400);
    assert.equal(unknown.body["message"], "container x is not valid for pod one");
    const noCommand = await refused(`${ws}${PODS}/one/exec?stdout=true`);
    assert.match(String(noCommand.body["message"]), /at least one command/);
    const noStream = await refused(`${ws}${PODS}/one/exec?command=true`);
    assert.match(String(noStream.body["message"]), /at least 1 of stdin, stdout, stderr/);
    const oldProtocol = await refused(`${ws}${PODS}/one/exec?command=true&stdout=true`, ["channel.k8s.io"]);
    assert.equal(oldProtocol.code, 400);
    assert.match(String(oldProtocol.body["message"]), /v5\.channel\.k8s\.io, v4\.channel\.k8s\.io; the client offered channel\.k8s\.io/);
    const notStreamed = await refused(`${ws}${PODS}/one/log`);
    assert.equal(notStreamed.code, 400);
    assert.deepEqual(streams.opened, [], "no session was opened");
  });

  it("upgrades SPDY/3.1 to v4.channel.k8s.io after the same checks, refuses other versions; a plain request is 400 Upgrade request required", async () => {
    const spdy = (path: string, version = "v4.channel.k8s.io") =>
      new Promise<{ code: number; body: Record<string, unknown>; protocol?: string }>((resolve, reject) => {
        const req = http.request(`${t.base}${path}`, {
          method: "POST",
          headers: { Connection: "Upgrade", Upgrade: "SPDY/3.1", "X-Stream-Protocol-Version": version },
        });
        req.on("upgrade", (res, socket) => {
          socket.destroy();
          resolve({ code: res.statusCode ?? 0, body: {}, protocol: String(res.headers["x-stream-protocol-version"]) });
        });
        req.on("response", (res) => {
          let text = "";
          res.on("data", (b: Buffer) => (text += b.toString()));
          res.on("end", () => resolve({ code: res.statusCode ?? 0, body: JSON.parse(text) as Record<string, unknown> }));
        });
        req.on("error", reject);
        req.end();
      });
    const old = await spdy(`${PODS}/one/exec?command=true&stdout=true`, "channel.k8s.io");
    assert.equal(old.code, 400);
    assert.match(String(old.body["message"]), /pods\/exec over SPDY\/3\.1 speaks v4\.channel\.k8s\.io; the client offered channel\.k8s\.io/);
    assert.equal((await spdy(`${PODS}/nope/attach?stdout=true`)).code, 404, "the pod is checked first");
    const up = await spdy(`${PODS}/one/exec?command=true&stdout=true`);
    assert.equal(up.code, 101);
    assert.equal(up.protocol, "v4.channel.k8s.io");
    const plain = await t.call("POST", `${PODS}/one/exec?command=true&stdout=true`);
    assert.equal(plain.status, 400);
    assert.equal(plain.json["message"], "Upgrade request required");
  });

  it("upgrades to v5.channel.k8s.io; a node agent that does not answer is a 503 Status on the error channel, then a normal close", async () => {
    const client = new WebSocket(`${ws}${PODS}/one/exec?command=sh&command=-c&command=exit%203&stdout=true&stderr=true`, [...CHANNEL_PROTOCOLS]);
    const messages: Buffer[] = [];
    client.on("message", (d: Buffer) => messages.push(d));
    const closed = await new Promise<number>((resolve, reject) => {
      client.on("close", (code) => resolve(code));
      client.on("error", reject);
    });
    assert.equal(client.protocol, "v5.channel.k8s.io");
    assert.equal(closed, 1000);
    assert.equal(messages.length, 1);
    assert.equal(messages[0]![0], Channel.Error);
    const status = JSON.parse(messages[0]!.subarray(1).toString()) as Record<string, unknown>;
    assert.equal(status["code"], 503);
    assert.equal(status["message"], "node agent for node n1 is not answering");
    assert.deepEqual(streams.opened.at(-1)?.command, ["sh", "-c", "exit 3"]);
  });
});
