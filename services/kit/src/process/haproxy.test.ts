// test-tier: servers
// HAProxy in front of two "replicas" (plain HTTPS servers of this test
// answering /readyz on a plain HTTP port, as the api does): TCP passthrough
// (the client sees the replica's own certificate and its client certificate
// reaches the replica), both used, kill of one → marked DOWN and every
// connection goes to the other, the replica back → UP again.
import assert from "node:assert/strict";
import http from "node:http";
import https from "node:https";
import type { AddressInfo } from "node:net";
import { after, before, describe, it } from "node:test";
import { mkdtempSync, rmSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import type { TLSSocket } from "node:tls";
import { ensureCa, signCert } from "../secrets/index.js";
import { startHaproxy, type HaproxyHandle } from "./haproxy.js";

interface Replica {
  name: string;
  port: number;
  healthPort: number;
  close(): Promise<void>;
}

interface Pem {
  cert: string;
  key: string;
}
let ca: string;
let server: Pem;
let client: Pem;

async function replica(name: string, port = 0, healthPort = 0): Promise<Replica> {
  const served = https.createServer({ ...server, ca, requestCert: true, rejectUnauthorized: false }, (req, res) => {
    // Signed by the CA and presented to this replica, not to HAProxy.
    res.end(JSON.stringify({ name, clientCert: (req.socket as TLSSocket).authorized }));
  });
  const health = http.createServer((_req, res) => res.end("ok"));
  const listen = (s: http.Server, p: number) => new Promise<number>((resolve) => s.listen(p, "127.0.0.1", () => resolve((s.address() as AddressInfo).port)));
  const r = { name, port: await listen(served, port), healthPort: await listen(health, healthPort) };
  return {
    ...r,
    close: async () => {
      served.closeAllConnections();
      health.closeAllConnections();
      await Promise.all([new Promise((x) => served.close(x)), new Promise((x) => health.close(x))]);
    },
  };
}

async function ask(port: number): Promise<{ name: string; clientCert: boolean }> {
  return new Promise((resolve, reject) => {
    const req = https.get({ host: "127.0.0.1", port, path: "/", ...client, ca, agent: false }, (res) => {
      let body = "";
      res.on("data", (b) => (body += b));
      res.on("end", () => resolve(JSON.parse(body) as { name: string; clientCert: boolean }));
    });
    req.on("error", reject);
  });
}

describe("startHaproxy", () => {
  let a: Replica;
  let b: Replica;
  let lb: HaproxyHandle;
  const pki = mkdtempSync(path.join(os.tmpdir(), "choreo-haproxy-test-"));
  before(async () => {
    const files = { certFile: path.join(pki, "ca.crt"), keyFile: path.join(pki, "ca.key") };
    ca = (await ensureCa(files, "test-ca")).pem;
    server = await signCert(files, "/CN=replica", ["subjectAltName=IP:127.0.0.1", "extendedKeyUsage=serverAuth"], 1);
    client = await signCert(files, "/CN=someone", ["extendedKeyUsage=clientAuth"], 1);
    a = await replica("a");
    b = await replica("b");
    lb = await startHaproxy({
      listeners: [
        { name: "https", servers: [a, b].map((r) => ({ name: r.name, port: r.port, healthPort: r.healthPort })) },
        // No health port: /readyz asked over TLS on the served port.
        { name: "tls-checked", servers: [{ name: "b", port: b.port }] },
      ],
    });
    await lb.waitFor("tls-checked", "b", "UP");
    await lb.waitFor("https", "a", "UP");
    await lb.waitFor("https", "b", "UP");
  });
  after(async () => {
    await lb?.stop();
    await a?.close();
    await b?.close();
    rmSync(pki, { recursive: true, force: true });
  });

  it("passes TLS through to the replicas (the client certificate reaches them) and uses both", async () => {
    const seen = new Set<string>();
    for (let i = 0; i < 10; i++) {
      const r = await ask(lb.ports.https!);
      assert.equal(r.clientCert, true);
      seen.add(r.name);
    }
    assert.deepEqual([...seen].sort(), ["a", "b"]);
  });

  it("a replica gone is marked DOWN and skipped; back on its ports, it is UP and used again", async () => {
    const { port, healthPort } = a;
    await a.close();
    // Before the checks notice, a refused connection is redispatched to the other replica: no request fails.
    for (let i = 0; i < 10; i++) assert.equal((await ask(lb.ports.https!)).name, "b");
    await lb.waitFor("https", "a", "DOWN", 5_000);
    a = await replica("a", port, healthPort);
    await lb.waitFor("https", "a", "UP", 5_000);
    const seen = new Set<string>();
    for (let i = 0; i < 10; i++) seen.add((await ask(lb.ports.https!)).name);
    assert.ok(seen.has("a"), "the replica back gets connections");
  });

  it("the config checks /readyz on the health port, else over TLS", async () => {
    const { haproxyConfig } = await import("./haproxy.js");
    const cfg = haproxyConfig(
      [
        {
          name: "https",
          port: 1,
          servers: [
            { name: "x", port: 2, healthPort: 3 },
            { name: "y", port: 4 },
          ],
        },
      ],
      {
        host: "127.0.0.1",
        socket: "/s",
        checkIntervalMs: 500,
        checkTimeoutMs: 1000,
      },
    );
    assert.match(cfg, /server x 127\.0\.0\.1:2 check port 3/);
    assert.match(cfg, /server y 127\.0\.0\.1:4 check check-ssl verify none/);
    assert.match(cfg, /uri \/readyz/);
  });
});
