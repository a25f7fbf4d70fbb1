// test-tier: servers
// The finding this closes: a NATS client with no credential listed
// namespaces and deleted a pod through the api's NATS handlers. nats-server
// now refuses it (and a wrong password) before it can send a request; a
// raw anonymous TCP client gets the same refusal on CONNECT.
import assert from "node:assert/strict";
import { once } from "node:events";
import net from "node:net";
import { after, before, describe, it } from "node:test";
import { connect } from "@nats-io/transport-node";
import { apiSubject, connectBus } from "@choreo/kit/bus";
import { fromKubeJson } from "@choreo/kit/kube-json";
import { withCredentials } from "@choreo/kit/secrets";
import { startStack, type Stack } from "../testing/stack.js";

describe("the api's NATS handlers with no anonymous client on the bus", () => {
  let s: Stack;
  before(async () => {
    s = await startStack();
    await s.client.create(
      fromKubeJson({ apiVersion: "v1", kind: "Pod", metadata: { name: "keep-me", namespace: "default" }, spec: { containers: [{ name: "c", image: "i" }] } }),
    );
  });
  after(async () => {
    await s?.stop();
  });

  it("an anonymous client cannot connect, so cannot list namespaces or delete a pod", async () => {
    await assert.rejects(connect({ servers: s.nats.address, maxReconnectAttempts: 0 }), /Authorization Violation/);
    await assert.rejects(connectBus(s.nats.address, "anonymous", ""), /Authorization Violation/);
    // The server's word on a bare CONNECT then a request to the api's subject.
    const sock = net.connect({ host: "127.0.0.1", port: s.nats.port });
    let out = "";
    sock.on("data", (b: Buffer) => (out += b.toString()));
    await once(sock, "connect");
    sock.write(`CONNECT {"verbose":false,"pedantic":false,"protocol":1}\r\nPUB ${apiSubject("delete")} 0\r\n\r\nPING\r\n`);
    await once(sock, "close");
    assert.match(out, /-ERR 'Authorization Violation'/);
    assert.doesNotMatch(out, /PONG/);
    // The pod is still there (get throws NotFound otherwise).
    await s.client.get("pods", "default", "keep-me");
  });

  it("a client with a wrong password, or a known password under another user, is refused", async () => {
    await assert.rejects(connectBus(withCredentials(s.nats.address, { user: "choreo", password: "guess" }), "wrong"), /Authorization Violation/);
    await assert.rejects(
      connectBus(withCredentials(s.nats.address, { user: "admin", password: s.nats.credentials.password }), "wrong-user"),
      /Authorization Violation/,
    );
  });

  it("a client with the credentials is served (the harness's URL carries them)", async () => {
    const nc = await connectBus(s.nats.address, "with-file", s.nats.credentialsFile);
    try {
      const reply = await nc.request(apiSubject("list"), new Uint8Array(), { timeout: 5_000 });
      assert.ok(reply.data.length > 0);
    } finally {
      await nc.close();
    }
    const namespaces = await s.client.list("namespaces");
    assert.ok(namespaces.items.length >= 1);
  });
});
