import assert from "node:assert/strict";
import { describe, it } from "node:test";
import dnsPacket, { type Answer, type Packet, type RecordType } from "dns-packet";
import { unwrap } from "@choreo/kit";
import { fromKubeJson } from "@choreo/kit/kube-json";
import type { Endpoints, Service } from "@choreo/kit/gen/choreo/core/v1/core";
import { answer, DNS_TTL, inDomain, Rcode, rcodeOf } from "./answer.js";
import { staticSnapshot } from "./snapshot.js";

/** A Service from Kubernetes JSON. */
function service(ns: string, name: string, clusterIP: string, ports: { name?: string; port: number; protocol?: string }[] = [{ port: 80 }]): Service {
  return unwrap(fromKubeJson({ apiVersion: "v1", kind: "Service", metadata: { namespace: ns, name }, spec: { clusterIP, ports } })) as Service;
}

/** Endpoints with ready and not-ready addresses on the given ports. */
function endpoints(
  ns: string,
  name: string,
  ready: (string | { ip: string; hostname: string })[],
  notReady: string[] = [],
  ports = [{ name: "http", port: 8080 }],
): Endpoints {
  const addr = (x: string | { ip: string; hostname: string }): { ip: string; hostname?: string } => (typeof x === "string" ? { ip: x } : x);
  return unwrap(
    fromKubeJson({
      apiVersion: "v1",
      kind: "Endpoints",
      metadata: { namespace: ns, name },
      subsets: [{ addresses: ready.map(addr), notReadyAddresses: notReady.map((ip) => ({ ip })), ports }],
    }),
  ) as Endpoints;
}

const snap = staticSnapshot(
  [
    service("default", "web", "10.96.0.10", [{ name: "http", port: 80 }, { name: "dns", port: 53, protocol: "UDP" }, { port: 9000 }]),
    service("default", "db", "None", [{ name: "http", port: 80 }]),
    service("other", "web", "10.96.0.20"),
  ],
  [endpoints("default", "db", ["10.244.0.5", { ip: "10.244.1.6", hostname: "db-0" }], ["10.244.0.9"])],
);

const ask = (name: string, type: RecordType | "ANY" = "A", extra: Partial<Packet> = {}): Packet => {
  // A round trip through the wire, so tests see what a client would.
  const q: Packet = { type: "query", id: 42, flags: dnsPacket.RECURSION_DESIRED, questions: [{ name, type: type as RecordType }], ...extra };
  const res = answer(dnsPacket.decode(dnsPacket.encode(q)), snap);
  assert.ok(res, `${name} is in the cluster domain`);
  return dnsPacket.decode(dnsPacket.encode(res));
};
const data = (rs: Answer[] | undefined): unknown[] => (rs ?? []).map((r) => ("data" in r ? r.data : undefined));

describe("answer", () => {
  it("gives a Service's ClusterIP for its full name, authoritatively, TTL 5 s", () => {
    const res = ask("web.default.svc.cluster.local");
    assert.equal(rcodeOf(res), Rcode.NOERROR);
    assert.equal(res.id, 42);
    assert.deepEqual(data(res.answers), ["10.96.0.10"]);
    assert.equal(res.answers?.[0]?.type === "A" && res.answers[0].ttl, DNS_TTL);
    const d = dnsPacket.decode(dnsPacket.encode(res));
    assert.equal(d.flag_qr, true);
    assert.equal(d.flag_aa, true);
    assert.equal(d.flag_rd, true);
    assert.deepEqual(data(ask("web.other.svc.cluster.local").answers), ["10.96.0.20"]);
  });

  it("ignores case and echoes the question's spelling", () => {
    const res = ask("WeB.Default.SVC.Cluster.Local.");
    assert.deepEqual(data(res.answers), ["10.96.0.10"]);
    assert.equal(res.answers?.[0]?.name, "WeB.Default.SVC.Cluster.Local");
  });

  it("gives a headless Service's ready endpoint IPs, and its endpoints by hostname or dashed IP", () => {
    assert.deepEqual(data(ask("db.default.svc.cluster.local").answers).sort(), ["10.244.0.5", "10.244.1.6"]);
    assert.deepEqual(data(ask("db-0.db.default.svc.cluster.local").answers), ["10.244.1.6"]);
    assert.deepEqual(data(ask("10-244-0-5.db.default.svc.cluster.local").answers), ["10.244.0.5"]);
    assert.equal(rcodeOf(ask("10-244-0-9.db.default.svc.cluster.local")), Rcode.NXDOMAIN, "not ready: no name");
    assert.equal(rcodeOf(ask("db-0.web.default.svc.cluster.local")), Rcode.NXDOMAIN, "a ClusterIP Service has no endpoint names");
  });

  it("gives SRV records for named ports, with the targets' addresses", () => {
    const res = ask("_http._tcp.web.default.svc.cluster.local", "SRV");
    assert.deepEqual(data(res.answers), [{ priority: 0, weight: 100, port: 80, target: "web.default.svc.cluster.local" }]);
    assert.deepEqual(
      res.additionals?.map((r) => [r.name, "data" in r ? r.data : undefined]),
      [["web.default.svc.cluster.local", "10.96.0.10"]],
    );
    assert.deepEqual(
      data(ask("_dns._udp.web.default.svc.cluster.local", "SRV").answers).map((d) => (d as { port: number }).port),
      [53],
    );
    assert.equal(rcodeOf(ask("_dns._tcp.web.default.svc.cluster.local", "SRV")), Rcode.NXDOMAIN, "wrong protocol");
    const headless = ask("_http._tcp.db.default.svc.cluster.local", "SRV");
    assert.deepEqual(
      data(headless.answers)
        .map((d) => (d as { target: string }).target)
        .sort(),
      ["10-244-0-5.db.default.svc.cluster.local", "db-0.db.default.svc.cluster.local"],
    );
    assert.deepEqual(
      data(headless.answers).map((d) => (d as { port: number }).port),
      [8080, 8080],
    );
    assert.equal(ask("_http._tcp.web.default.svc.cluster.local", "A").answers?.length, 0, "an SRV name has no A");
    assert.equal(ask("web.default.svc.cluster.local", "SRV").answers?.length, 2, "every named port at the bare name");
  });

  it("answers NOERROR without records for other types of a known name, with the SOA", () => {
    for (const name of ["web.default.svc.cluster.local", "default.svc.cluster.local", "svc.cluster.local", "cluster.local"]) {
      const res = ask(name, "AAAA");
      assert.equal(rcodeOf(res), Rcode.NOERROR, name);
      assert.deepEqual(res.answers, [], name);
      assert.deepEqual(
        res.authorities?.map((r) => r.type),
        ["SOA"],
        name,
      );
    }
    assert.equal(ask("cluster.local", "SOA").answers?.[0]?.type, "SOA");
  });

  it("answers NXDOMAIN with the SOA for unknown names in the domain", () => {
    for (const name of [
      "nope.default.svc.cluster.local",
      "web.nons.svc.cluster.local",
      "nons.svc.cluster.local",
      "x.cluster.local",
      "a.b.c.d.e.svc.cluster.local",
    ]) {
      const res = ask(name);
      assert.equal(rcodeOf(res), Rcode.NXDOMAIN, name);
      assert.equal(res.authorities?.[0]?.type, "SOA", name);
      assert.equal(res.authorities?.[0]?.type === "SOA" && res.authorities[0].data.minimum, DNS_TTL);
    }
  });

  it("answers pod names a-b-c-d.<ns>.pod.<domain>", () => {
    assert.deepEqual(data(ask("10-244-0-7.default.pod.cluster.local").answers), ["10.244.0.7"]);
    assert.equal(rcodeOf(ask("not-an-ip.default.pod.cluster.local")), Rcode.NXDOMAIN);
  });

  it("leaves names outside the domain to the caller, and honours another domain", () => {
    const q: Packet = { type: "query", id: 1, questions: [{ name: "example.com", type: "A" }] };
    assert.equal(answer(q, snap), undefined);
    assert.equal(inDomain("cluster.local.example.com"), false);
    assert.equal(inDomain("Cluster.Local."), true);
    const other = answer({ ...q, questions: [{ name: "web.default.svc.corp.internal", type: "A" }] }, snap, "corp.internal");
    assert.deepEqual(data(other?.answers), ["10.96.0.10"]);
  });

  it("tolerates EDNS: the reply carries an OPT record", () => {
    const res = ask("web.default.svc.cluster.local", "A", {
      additionals: [{ type: "OPT", name: ".", udpPayloadSize: 4096, extendedRcode: 0, ednsVersion: 0, flags: 0, flag_do: false, options: [] }],
    });
    assert.deepEqual(data(res.answers), ["10.96.0.10"]);
    assert.deepEqual(
      res.additionals?.map((r) => r.type),
      ["OPT"],
    );
  });

  it("refuses several questions and other opcodes", () => {
    const two: Packet = {
      type: "query",
      id: 1,
      questions: [
        { name: "a.cluster.local", type: "A" },
        { name: "b.cluster.local", type: "A" },
      ],
    };
    assert.equal(rcodeOf(answer(two, snap)!), Rcode.FORMERR);
    const notify: Packet = { type: "query", id: 1, flags: 4 << 11, questions: [{ name: "cluster.local", type: "SOA" }] };
    assert.equal(rcodeOf(answer(notify, snap)!), Rcode.NOTIMP);
  });
});
