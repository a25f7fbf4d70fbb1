// test-tier: servers
// NATS over TLS (what compose runs, its nats-server on a network beyond
// loopback): a real nats-server with the bus's certificate refuses a client
// that does not speak TLS, one that does not trust the bus's CA, and one
// that trusts another CA; a client with the CA is served; a client with a CA
// refuses a server without TLS (no downgrade).
import assert from "node:assert/strict";
import { once } from "node:events";
import { existsSync, mkdtempSync, readdirSync, rmSync, statSync } from "node:fs";
import net from "node:net";
import os from "node:os";
import path from "node:path";
import { after, before, describe, it } from "node:test";
import { connect } from "@nats-io/transport-node";
import { connectBus } from "../bus/stream.js";
import { ensureBusTls } from "../secrets/bus-tls.js";
import { natsConnectOptions } from "../secrets/secrets.js";
import { waitFor } from "./process.js";
import { startNats, type NatsHandle } from "./servers.js";

const mode = (f: string): number => statSync(f).mode & 0o777;

/** What nats-server answers a plain CONNECT then PING on a raw socket (it closes the connection). */
async function plainConnect(port: number): Promise<string> {
  const sock = net.connect({ host: "127.0.0.1", port });
  let out = "";
  sock.on("data", (b: Buffer) => (out += b.toString()));
  sock.on("error", () => undefined);
  await once(sock, "connect");
  sock.write('CONNECT {"verbose":false,"pedantic":false,"protocol":1}\r\nPING\r\n');
  await once(sock, "close");
  return out;
}

describe("nats-server over TLS", () => {
  let nats: NatsHandle;
  let plain: NatsHandle;
  let other: string;
  before(async () => {
    [nats, plain] = await Promise.all([startNats({ tls: true }), startNats()]);
    other = mkdtempSync(path.join(os.tmpdir(), "choreo-other-ca-"));
  });
  after(async () => {
    await Promise.all([nats?.stop(), plain?.stop()]);
    rmSync(other, { recursive: true, force: true });
  });

  it("serves a client that verifies it with the bus's CA", async () => {
    assert.ok(nats.caFile, "a TLS server names its CA");
    const nc = await connectBus(nats.url, "tls-client", undefined, nats.caFile);
    try {
      assert.equal(nc.info?.tls_required, true);
      const sub = nc.subscribe("tls.echo", { callback: (_e, m) => void m.respond(m.data) });
      const reply = await nc.request("tls.echo", new TextEncoder().encode("hi"), { timeout: 5_000 });
      assert.equal(new TextDecoder().decode(reply.data), "hi");
      sub.unsubscribe();
    } finally {
      await nc.close();
    }
  });

  it("refuses a client that does not speak TLS", async () => {
    // The server announces tls_required, takes the plain CONNECT for a bad handshake and hangs up: no PONG.
    const out = await plainConnect(nats.port);
    assert.match(out, /"tls_required":true/);
    assert.doesNotMatch(out, /PONG|\+OK/);
    await waitFor(() => /TLS handshake error/.test(nats.process().output()), { timeoutMs: 10_000, message: "the server's log of the refused handshake" });
  });

  it("is refused by a client that does not trust its CA (the system's, or another bus's)", async () => {
    // The password is right: only the certificate is wrong.
    await assert.rejects(connect({ ...natsConnectOptions(nats.url), maxReconnectAttempts: 0 }), /certificate/i);
    const wrong = await ensureBusTls(other);
    await assert.rejects(connectBus(nats.url, "wrong-ca", undefined, wrong.caFile), /certificate/i);
  });

  it("a client with a CA refuses a server without TLS (no downgrade)", async () => {
    assert.equal(plain.caFile, undefined, "loopback stays plain unless asked");
    await assert.rejects(connectBus(plain.url, "downgrade", undefined, nats.caFile), /does not support 'tls'/);
  });

  it("keeps TLS across a reload (addUser), and the bus's CA key is nowhere", async () => {
    const file = await nats.addUser("actor-x", { publish: { allow: ["x.>"] }, subscribe: { allow: ["_INBOX.>"] } });
    assert.doesNotMatch(await plainConnect(nats.port), /PONG/);
    const nc = await connectBus(nats.address, "actor-x", file, nats.caFile);
    await nc.close();
    const tlsDir = path.join(nats.dir, "tls");
    assert.deepEqual(readdirSync(tlsDir).sort(), ["ca.crt", "server.crt", "server.key"]);
    assert.equal(mode(tlsDir), 0o700);
    assert.equal(mode(path.join(tlsDir, "server.key")), 0o600);
    assert.ok(!existsSync(path.join(tlsDir, "ca.key")));
  });

  it("listening beyond loopback means TLS", async (t) => {
    const addr = Object.values(os.networkInterfaces())
      .flat()
      .find((i) => i && i.family === "IPv4" && !i.internal)?.address;
    if (!addr) return t.skip("no non-loopback IPv4 address on this machine");
    const wide = await startNats({ host: addr });
    try {
      assert.ok(wide.caFile);
      assert.match(wide.url, new RegExp(`@${addr.replaceAll(".", "\\.")}:`));
      const nc = await connectBus(wide.url, "wide", undefined, wide.caFile);
      await nc.close();
    } finally {
      await wide.stop();
    }
  });
});
