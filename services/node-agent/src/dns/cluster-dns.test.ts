// test-tier: servers
import assert from "node:assert/strict";
import dgram from "node:dgram";
import { promises as dns } from "node:dns";
import net from "node:net";
import { after, before, describe, it } from "node:test";
import dnsPacket, { type RecordType } from "dns-packet";
import { unwrap, wrap } from "@choreo/kit";
import { fromKubeJson } from "@choreo/kit/kube-json";
import type { Endpoints, Service } from "@choreo/kit/gen/choreo/core/v1/core";
import { Informer } from "@choreo/kit/informer";
import { silentLogger } from "@choreo/kit/log";
import { freePort, waitFor } from "@choreo/kit/testing";
import { startStack, type Stack } from "@choreo/api/testing";
import { Rcode, rcodeOf } from "./answer.js";
import { ClusterDns, type ClusterDnsOptions } from "./cluster-dns.js";
import { frame, queryTcp, queryUdp, type DnsServer } from "./wire.js";

const WAIT = { timeoutMs: 10_000 };

const serviceJson = (name: string, clusterIP?: string): unknown => ({
  apiVersion: "v1",
  kind: "Service",
  metadata: { name, namespace: "default" },
  spec: { ...(clusterIP ? { clusterIP } : {}), selector: { app: name }, ports: [{ name: "http", port: 80, targetPort: 8080 }] },
});
const endpointsJson = (name: string, ips: string[]): unknown => ({
  apiVersion: "v1",
  kind: "Endpoints",
  metadata: { name, namespace: "default" },
  subsets: [{ addresses: ips.map((ip) => ({ ip })), ports: [{ name: "http", port: 8080 }] }],
});

/** A c-ares resolver asking only `server` (it falls back to TCP on a truncated reply). */
function resolver(server: DnsServer): dns.Resolver {
  const r = new dns.Resolver({ timeout: 1_000, tries: 2 });
  r.setServers([`${server.address}:${server.port}`]);
  return r;
}

const query = (name: string, type: RecordType = "A"): Buffer =>
  dnsPacket.encode({ type: "query", id: Math.floor(Math.random() * 65535), flags: dnsPacket.RECURSION_DESIRED, questions: [{ name, type }] });

/** One UDP query from a socket bound to `from`; rejects when nothing comes back within `ms`. */
function queryUdpFrom(from: string, server: DnsServer, msg: Buffer, ms: number): Promise<Buffer> {
  return new Promise((resolve, reject) => {
    const sock = dgram.createSocket("udp4");
    const timer = setTimeout(() => (sock.close(), reject(new Error("no reply"))), ms);
    sock.on("message", (reply) => (clearTimeout(timer), sock.close(), resolve(reply)));
    sock.bind(0, from, () => sock.send(msg, server.port, server.address));
  });
}

/** One TCP query from `from`; resolves with what came back before the server closed ("" when nothing). */
function tcpFrom(from: string, server: DnsServer, msg: Buffer): Promise<string> {
  return new Promise((resolve, reject) => {
    const sock = net.connect({ host: server.address, port: server.port, localAddress: from });
    let got = "";
    const timer = setTimeout(() => (sock.destroy(), reject(new Error("neither reply nor close"))), 3_000);
    sock.on("connect", () => sock.write(frame(msg)));
    sock.on("data", (d) => (got += d.toString("hex")));
    sock.on("error", () => undefined);
    sock.on("close", () => (clearTimeout(timer), resolve(got)));
  });
}

describe("ClusterDns against the api", () => {
  let s: Stack;
  const running: { ac: AbortController; done: Promise<void> }[] = [];
  const startDns = async (o: Partial<ClusterDnsOptions> = {}): Promise<DnsServer> => {
    const port = o.listen?.port ?? (await freePort());
    const d = new ClusterDns({ client: s.client, nc: s.nc, jsm: s.jsm, log: silentLogger(), upstream: [], ...o, listen: { address: "127.0.0.1", port } });
    const ac = new AbortController();
    running.push({ ac, done: d.start(ac.signal) });
    return d.listening;
  };
  let server: DnsServer;
  let webIp: string;

  before(async () => {
    s = await startStack();
    const web = unwrap(await s.client.create(fromKubeJson(serviceJson("web")))) as Service;
    webIp = web.spec?.clusterIp ?? "";
    assert.match(webIp, /^10\.96\.\d+\.\d+$/, "the api allocates the ClusterIP");
    await s.client.create(fromKubeJson(serviceJson("db", "None")));
    await s.client.create(fromKubeJson(endpointsJson("db", ["10.244.0.5", "10.244.1.6"])));
    server = await startDns();
  });
  after(async () => {
    for (const r of running) r.ac.abort();
    await Promise.all(running.map((r) => r.done));
    await s?.stop();
  });

  it("resolves a Service's full name to its ClusterIP, and a headless one to its endpoints", async () => {
    const r = resolver(server);
    assert.deepEqual(await waitFor(async () => r.resolve4("web.default.svc.cluster.local").catch(() => undefined), WAIT), [webIp]);
    assert.deepEqual((await r.resolve4("db.default.svc.cluster.local")).sort(), ["10.244.0.5", "10.244.1.6"]);
    const srv = await r.resolveSrv("_http._tcp.web.default.svc.cluster.local");
    assert.deepEqual(
      srv.map((x) => [x.name, x.port]),
      [["web.default.svc.cluster.local", 80]],
    );
  });

  it("answers NXDOMAIN for an unknown name in the domain", async () => {
    await assert.rejects(resolver(server).resolve4("nope.default.svc.cluster.local"), { code: "ENOTFOUND" });
  });

  it("follows changes: new endpoints, a new Service, a deleted Service", async () => {
    const r = resolver(server);
    const eps = unwrap(await s.client.get("endpoints", "default", "db")) as Endpoints;
    eps.subsets[0]!.addresses = [eps.subsets[0]!.addresses[0]!];
    await s.client.update(wrap("endpoints", eps));
    await waitFor(async () => (await r.resolve4("db.default.svc.cluster.local")).length === 1, { ...WAIT, message: "endpoint gone" });
    const api = unwrap(await s.client.create(fromKubeJson(serviceJson("api")))) as Service;
    assert.deepEqual(await waitFor(async () => r.resolve4("api.default.svc.cluster.local").catch(() => undefined), WAIT), [api.spec?.clusterIp]);
    await s.client.delete("services", "default", "api");
    await waitFor(
      async () =>
        r.resolve4("api.default.svc.cluster.local").then(
          () => false,
          (err: { code?: string }) => err.code === "ENOTFOUND",
        ),
      {
        ...WAIT,
        message: "deleted Service NXDOMAIN",
      },
    );
  });

  it("answers over TCP, length-prefixed", async () => {
    const res = dnsPacket.decode(await queryTcp(server, query("web.default.svc.cluster.local"), 2_000));
    assert.deepEqual(
      res.answers?.map((a) => ("data" in a ? a.data : undefined)),
      [webIp],
    );
  });

  it("truncates a large UDP reply; the client gets every address over TCP", async () => {
    const ips = Array.from({ length: 60 }, (_, i) => `10.244.2.${i + 1}`);
    await s.client.create(fromKubeJson(serviceJson("many", "None")));
    await s.client.create(fromKubeJson(endpointsJson("many", ips)));
    const r = resolver(server);
    await waitFor(async () => (await r.resolve4("many.default.svc.cluster.local").catch(() => [])).length === 60, { ...WAIT, message: "60 addresses" });
    const udp = dnsPacket.decode(await queryUdp(server, query("many.default.svc.cluster.local"), 2_000));
    assert.equal(udp.flag_tc, true);
    assert.equal(udp.answers?.length, 0);
  });

  it("answers from shared informers the caller runs (the service proxy's)", async () => {
    const log = silentLogger();
    const services = new Informer<"service">({ client: s.client, nc: s.nc, jsm: s.jsm, log, kind: "service" });
    const endpoints = new Informer<"endpoints">({ client: s.client, nc: s.nc, jsm: s.jsm, log, kind: "endpoints" });
    const ac = new AbortController();
    running.push({ ac, done: Promise.all([services.start(ac.signal), endpoints.start(ac.signal)]).then(() => undefined) });
    const shared = await startDns({ client: undefined, nc: undefined, jsm: undefined, stores: { services, endpoints } });
    const r = resolver(shared);
    assert.deepEqual(await waitFor(async () => r.resolve4("web.default.svc.cluster.local").catch(() => undefined), WAIT), [webIp]);
  });

  it("answers only its clients: others get no UDP reply and a closed TCP connection", async () => {
    const only = await startDns({ clients: ["10.244.0.0/16"] });
    const q = query("web.default.svc.cluster.local");
    // From the listen address itself (the host on the bridge address): answered.
    const ok = await waitFor(
      async () => {
        const res = dnsPacket.decode(await queryUdp(only, q, 2_000));
        return rcodeOf(res) === Rcode.NOERROR ? res : undefined;
      },
      { ...WAIT, message: "answered from the listen address" },
    );
    assert.deepEqual(
      ok.answers?.map((a) => ("data" in a ? a.data : undefined)),
      [webIp],
    );
    // From another address, outside the ranges: nothing over UDP, closed over TCP.
    await assert.rejects(queryUdpFrom("127.0.0.2", only, q, 1_000), /no reply/);
    assert.equal(await tcpFrom("127.0.0.2", only, q), "");
    // The default (no clients given): loopback, so the host's own tools.
    assert.equal(rcodeOf(dnsPacket.decode(await queryUdpFrom("127.0.0.2", server, q, 2_000))), Rcode.NOERROR);
  });

  it("caps an upstream's oversized UDP reply at the client's 512 bytes (TC set)", async () => {
    const big = dgram.createSocket("udp4");
    big.on("message", (msg, rinfo) => {
      const q = dnsPacket.decode(msg);
      const name = q.questions?.[0]?.name ?? "";
      const answers = Array.from({ length: 150 }, (_, i) => ({ type: "A" as const, name, ttl: 60, data: `192.0.2.${i % 250}` }));
      big.send(
        dnsPacket.encode({ type: "response", id: q.id, flags: dnsPacket.RECURSION_AVAILABLE, questions: q.questions, answers }),
        rinfo.port,
        rinfo.address,
      );
    });
    await new Promise<void>((res) => big.bind(0, "127.0.0.1", () => res()));
    try {
      const fwd = await startDns({ upstream: [`127.0.0.1:${big.address().port}`] });
      const reply = await queryUdp(fwd, query("huge.example.com"), 3_000);
      assert.ok(reply.length <= 512, `${reply.length} bytes`);
      const res = dnsPacket.decode(reply);
      assert.equal(res.flag_tc, true);
      assert.equal(res.questions?.[0]?.name, "huge.example.com");
    } finally {
      big.close();
    }
  });

  it("forwards other names upstream over UDP and TCP; SERVFAIL when upstream is silent, REFUSED without upstream", async () => {
    // The upstream: another responder, authoritative for corp.internal, reading the same api.
    const upstream = await startDns({ domain: "corp.internal" });
    const fwd = await startDns({ upstream: [`${upstream.address}:${upstream.port}`] });
    const r = resolver(fwd);
    assert.deepEqual(await waitFor(async () => r.resolve4("web.default.svc.corp.internal").catch(() => undefined), WAIT), [webIp]);
    const overTcp = dnsPacket.decode(await queryTcp(fwd, query("web.default.svc.corp.internal"), 3_000));
    assert.deepEqual(
      overTcp.answers?.map((a) => ("data" in a ? a.data : undefined)),
      [webIp],
    );

    const silent = dgram.createSocket("udp4");
    await new Promise<void>((res) => silent.bind(0, "127.0.0.1", () => res()));
    try {
      const dead = await startDns({ upstream: [`127.0.0.1:${silent.address().port}`], upstreamTimeoutMs: 200 });
      const res = dnsPacket.decode(await queryUdp(dead, query("example.com"), 3_000));
      assert.equal(rcodeOf(res), Rcode.SERVFAIL);
    } finally {
      silent.close();
    }
    assert.equal(rcodeOf(dnsPacket.decode(await queryUdp(server, query("example.com"), 2_000))), Rcode.REFUSED);
  });
});
