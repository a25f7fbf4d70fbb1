import assert from "node:assert/strict";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, it } from "node:test";
import dnsPacket from "dns-packet";
import { Rcode, rcodeOf } from "./answer.js";
import { capForwarded, respond, type ResponderOptions } from "./responder.js";
import { staticSnapshot } from "./snapshot.js";
import { ForwardLimiter, Forwarder, hostNameservers } from "./upstream.js";
import { FrameReader, frame, parseServer } from "./wire.js";

const opts = (o: Partial<ResponderOptions> = {}): ResponderOptions => ({
  snapshot: staticSnapshot([]),
  synced: () => true,
  domain: "cluster.local",
  forwarder: new Forwarder([]),
  ...o,
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

describe("forwarding limits", () => {
  /** An upstream reply with `n` A records for `name`. */
  const bigReply = (id: number, name: string, n: number): Buffer =>
    dnsPacket.encode({
      type: "response",
      id,
      flags: dnsPacket.RECURSION_DESIRED | dnsPacket.RECURSION_AVAILABLE,
      questions: [{ name, type: "A" }],
      answers: Array.from({ length: n }, (_, i) => ({ type: "A" as const, name, ttl: 60, data: `192.0.2.${i % 250}` })),
    });

  it("caps an oversized upstream reply to the client's UDP limit: truncated, its question and id", async () => {
    const q = query("big.example.com");
    const huge = bigReply(7, "big.example.com", 150); // ~2.4 kB for a client without EDNS
    assert.ok(huge.length > 2000);
    const forwarder = { enabled: true, forward: async () => huge };
    const r = await respond(q, "udp", opts({ forwarder }));
    assert.equal(r.outcome, "forwarded");
    assert.ok(r.reply!.length <= 512, `${r.reply!.length} bytes`);
    const res = dnsPacket.decode(r.reply!);
    assert.equal(res.id, 7);
    assert.equal(res.flag_tc, true);
    assert.deepEqual(res.questions, [{ name: "big.example.com", type: "A", class: "IN" }]);
    assert.equal(res.answers?.length, 0);
    // Over TCP the whole reply passes (it fits a frame); a small UDP reply passes as it is.
    assert.equal((await respond(q, "tcp", opts({ forwarder }))).reply, huge);
    const small = bigReply(7, "big.example.com", 2);
    assert.equal(capForwarded(small, dnsPacket.decode(q), "udp"), small);
    // With EDNS the client's size counts, up to 1232.
    const edns = dnsPacket.decode(
      dnsPacket.encode({
        type: "query",
        id: 9,
        questions: [{ name: "big.example.com", type: "A" }],
        additionals: [{ type: "OPT", name: ".", udpPayloadSize: 4096, extendedRcode: 0, ednsVersion: 0, flags: 0, flag_do: false, options: [] }],
      }),
    );
    assert.ok(capForwarded(bigReply(9, "big.example.com", 60), edns, "udp").length <= 1232);
    // Unreadable and too big: SERVFAIL, truncated.
    const garbage = Buffer.alloc(600, 0xff);
    const bad = dnsPacket.decode(capForwarded(garbage, dnsPacket.decode(q), "udp"));
    assert.equal(rcodeOf(bad), Rcode.SERVFAIL);
    assert.equal(bad.flag_tc, true);
  });

  it("refuses a client's forwards beyond its cap while others' go on", async () => {
    const limiter = new ForwardLimiter(2);
    const pending: ((b: Buffer | undefined) => void)[] = [];
    const forwarder = { enabled: true, forward: () => new Promise<Buffer | undefined>((r) => pending.push(r)) };
    const o = (client: string) => opts({ forwarder, limiter, client });
    const first = [respond(query("a.example.com"), "udp", o("10.244.1.5")), respond(query("b.example.com"), "udp", o("10.244.1.5"))];
    const third = await respond(query("c.example.com"), "udp", o("10.244.1.5"));
    assert.equal(third.outcome, "limited");
    assert.equal(rcodeOf(dnsPacket.decode(third.reply!)), Rcode.REFUSED);
    const other = respond(query("d.example.com"), "udp", o("10.244.1.6"));
    assert.equal(limiter.count("10.244.1.6"), 1, "another client is not held up");
    for (const r of pending) r(undefined);
    assert.deepEqual(
      (await Promise.all([...first, other])).map((r) => r.outcome),
      ["servfail", "servfail", "servfail"],
    );
    assert.equal(limiter.count("10.244.1.5"), 0, "slots are released, failures included");
    assert.equal(limiter.acquire("10.244.1.5"), true);
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
