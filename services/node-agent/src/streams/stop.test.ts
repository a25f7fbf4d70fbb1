// test-tier: servers
// A node agent that stops while it serves streams tells the api why (a 503
// "node agent for node N is stopping"), for exec and for port-forward, and
// ends what the streams held (the exec's session is killed). Real
// nats-server; the runtime is a stand-in session that runs until killed.
import assert from "node:assert/strict";
import { createServer, type Server } from "node:net";
import { PassThrough } from "node:stream";
import { after, before, describe, it } from "node:test";
import type { NatsConnection } from "@nats-io/transport-node";
import { agentExecSubject, agentPortForwardSubject, connectBus, openBusStream } from "@choreo/kit/bus";
import { PodExecRequest, PodPortForwardRequest } from "@choreo/kit/gen/choreo/node/v1/exec";
import { silentLogger } from "@choreo/kit/log";
import { startNats, type ServerHandle } from "@choreo/kit/process";
import { waitFor } from "@choreo/kit/testing";
import type { StreamSession } from "../runtime/runtime.js";
import { ExecServer } from "./exec-server.js";
import { PortForwardServer } from "./port-forward-server.js";

describe("stream servers at the agent's stop", () => {
  let nats: ServerHandle;
  let api: NatsConnection;
  let agent: NatsConnection;
  let pod: Server;
  let podPort = 0;

  before(async () => {
    nats = await startNats();
    api = await connectBus(nats.url, "api");
    agent = await connectBus(nats.url, "agent");
    pod = createServer((s) => s.on("error", () => undefined));
    await new Promise<void>((resolve) => pod.listen(0, "127.0.0.1", resolve));
    podPort = (pod.address() as { port: number }).port;
  });
  after(async () => {
    pod?.close();
    await api?.close();
    await agent?.close();
    await nats?.stop();
  });

  it("an exec: the api hears a 503 saying the agent stops, and the session is killed", async () => {
    let killed = false;
    const stdout = new PassThrough();
    let exit: (code: number) => void = () => undefined;
    const session: StreamSession = {
      stdin: undefined,
      stdout,
      stderr: undefined,
      resize: () => undefined,
      exit: new Promise<number>((resolve) => (exit = resolve)),
      kill: () => {
        killed = true;
        stdout.end();
        exit(137);
      },
    };
    const server = new ExecServer({
      nc: agent,
      node: "n1",
      runtime: { name: "docker", execStream: () => Promise.resolve(session) },
      pods: { get: () => undefined },
      log: silentLogger(),
    });
    const ac = new AbortController();
    const running = server.start(ac.signal);
    await agent.flush();
    const stream = await openBusStream(
      api,
      agentExecSubject("n1"),
      (inbox) =>
        PodExecRequest.encode(
          PodExecRequest.fromPartial({ namespace: "d", name: "p", uid: "u", container: "c", command: ["sleep", "1"], stdout: true, inbox }),
        ).finish(),
      { peer: "node agent for node n1" },
    );
    ac.abort();
    await running;
    await waitFor(() => stream.why !== undefined, { timeoutMs: 10_000, message: "the api's side stopped" });
    assert.equal(stream.why, "aborted");
    assert.equal(stream.abortStatus?.code, 503);
    assert.equal(stream.abortStatus?.message, "node agent for node n1 is stopping");
    assert.ok(killed, "the session was killed");
    stream.close();
  });

  it("a port-forward: the api hears the same 503", async () => {
    const server = new PortForwardServer({
      nc: agent,
      node: "n1",
      runtime: {
        name: "process",
        podStatus: () => ({ uid: "u", podIp: "127.0.0.1", startedAt: "", containerStatuses: [] }),
        execStream: () => Promise.reject(new Error("unused")),
      },
      pods: { get: () => undefined },
      log: silentLogger(),
    });
    const ac = new AbortController();
    const running = server.start(ac.signal);
    await agent.flush();
    const stream = await openBusStream(
      api,
      agentPortForwardSubject("n1"),
      (inbox) => PodPortForwardRequest.encode({ namespace: "d", name: "p", uid: "u", port: podPort, inbox }).finish(),
      { peer: "node agent for node n1" },
    );
    await waitFor(() => server.connections === 1, { timeoutMs: 5_000, message: "the connection open" });
    ac.abort();
    await running;
    await waitFor(() => stream.why !== undefined, { timeoutMs: 10_000, message: "the api's side stopped" });
    assert.equal(stream.abortStatus?.code, 503);
    assert.equal(stream.abortStatus?.message, "node agent for node n1 is stopping");
    assert.equal(server.connections, 0);
    stream.close();
  });
});
