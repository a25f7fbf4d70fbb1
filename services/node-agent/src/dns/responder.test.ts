import assert from "node:assert/strict";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, it } from "node:test";
import dnsPacket from "dns-packet";
import { Rcode, rcodeOf } from "./answer.js";
import { respond, type ResponderOptions } from "./responder.js";
import { staticSnapshot } from "./snapshot.js";
import { Forwarder, hostNameservers } from "./upstream.js";
import { FrameReader, frame, parseServer } from "./wire.js";

const opts = (o: Partial<ResponderOptions> = {}): ResponderOptions => ({
  snapshot: staticSnapshot([]), synced: () => true, domain: "cluster.local", forwarder: new Forwarder([]), ...o,
});
const query = (name: string): Buffer => dnsPacket.encode({ type: "query", id: 7, flags: dnsPacket.RECURSION_DESIRED, questions: [{ name, type: "A" }] });

describe("respond", () => {
  it("answers SERVFAIL for cluster names until the caches are synced", async () => {
    const r = await respond(query("web.default.svc.cluster.local"), "udp", opts({ synced: () => false }));
    assert.equal(rcodeOf(dnsPacket.decode(r.reply!)), Rcode.SERVFAIL);
    const synced = await respond(query("web.default.svc.cluster.local"), "udp", opts());
    assert.equal(rcodeOf(dnsPacket.decode(synced.reply!)), Rcode.NXDOMAIN);
    assert.equal(synced.outcome, "nxdomain");
  });

  it("refuses names outside the domain without upstreams", async () => {
    const r = await respond(query("example.com"), "tcp", opts());
    assert.equal(rcodeOf(dnsPacket.decode(r.reply!)), Rcode.REFUSED);
    assert.equal(r.outcome, "refused");
  });

  it("answers FORMERR to an unreadable query with a header, and drops shorter garbage and responses", async () => {
    const garbage = Buffer.concat([query("x.cluster.local").subarray(0, 12), Buffer.from([0xff, 0xff, 0xff])]);
    const r = await respond(garbage, "udp", opts());
    assert.equal(r.outcome, "formerr");
    assert.equal(r.reply?.readUInt16BE(0), 7);
    assert.equal((r.reply?.readUInt16BE(2) ?? 0) & 0x800f, 0x8000 | Rcode.FORMERR);
    assert.equal((await respond(Buffer.from([1, 2, 3]), "udp", opts())).reply, undefined);
    const response = dnsPacket.encode({ type: "response", id: 1, questions: [{ name: "a.cluster.local", type: "A" }] });
    assert.equal((await respond(response, "udp", opts())).reply, undefined);
  });
});

describe("wire and upstream helpers", () => {
  it("parses server addresses", () => {
    assert.deepEqual(parseServer("10.0.0.1"), { address: "10.0.0.1", port: 53 });
    assert.deepEqual(parseServer("127.0.0.1:5353"), { address: "127.0.0.1", port: 5353 });
    assert.deepEqual(parseServer("::1"), { address: "::1", port: 53 });
    assert.deepEqual(parseServer("[fd00::1]:5353"), { address: "fd00::1", port: 5353 });
  });

  it("splits a TCP stream into messages whatever the chunking", () => {
    const a = query("a.cluster.local");
    const b = query("b.cluster.local");
    const stream = Buffer.concat([frame(a), frame(b)]);
    const r = new FrameReader();
    const out = [...r.push(stream.subarray(0, 1)), ...r.push(stream.subarray(1, a.length + 3)), ...r.push(stream.subarray(a.length + 3))];
    assert.deepEqual(out, [a, b]);
  });

  it("reads the host's nameservers, skipping the responder's own address", () => {
    const dir = mkdtempSync(join(tmpdir(), "choreo-dns-"));
    try {
      const path = join(dir, "resolv.conf");
      writeFileSync(path, "# comment\nnameserver 10.1.1.1\nsearch x\nnameserver 10.244.0.1\n  nameserver 8.8.8.8\n");
      assert.deepEqual(hostNameservers(["10.244.0.1"], path), ["10.1.1.1", "8.8.8.8"]);
      assert.deepEqual(hostNameservers([], join(dir, "missing")), []);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
