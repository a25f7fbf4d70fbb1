import assert from "node:assert/strict";
import { createHash } from "node:crypto";
import { describe, it } from "node:test";
import { SPDY_DICTIONARY } from "./dictionary.js";
import {
  dataFrame,
  decodeHeaderBlock,
  encodeHeaderBlock,
  FrameReader,
  FrameWriter,
  goAwayFrame,
  pingFrame,
  rstStreamFrame,
  SpdyProtocolError,
  type SpdyFrame,
} from "./framer.js";

async function* chunks(...bufs: Buffer[]): AsyncGenerator<Buffer> {
  for (const b of bufs) yield b;
}

async function readAll(...bufs: Buffer[]): Promise<SpdyFrame[]> {
  const out: SpdyFrame[] = [];
  for await (const f of new FrameReader(chunks(...bufs)).frames()) out.push(f);
  return out;
}

describe("SPDY/3 framing", () => {
  it("the header dictionary is the spec's 1423 bytes (the digest of Go's and spdystream's copy)", () => {
    assert.equal(SPDY_DICTIONARY.length, 1423);
    assert.equal(createHash("sha256").update(SPDY_DICTIONARY).digest("hex"), "51d27341373f923f3cd88e1eb7162aeaa3723d7585ff2399201dc06498407f02");
  });

  it("header blocks: names lower-cased, repeated values NUL-joined, and back", () => {
    const block = encodeHeaderBlock([
      ["StreamType", "data"],
      ["port", "8080"],
      ["x", ["a", "b"]],
    ]);
    assert.deepEqual(
      [...decodeHeaderBlock(block)],
      [
        ["streamtype", ["data"]],
        ["port", ["8080"]],
        ["x", ["a", "b"]],
      ],
    );
    assert.throws(() => decodeHeaderBlock(block.subarray(0, block.length - 2)), SpdyProtocolError);
  });

  it("reads what a client writes, split at any byte: streams with compressed headers in one zlib stream, data, FIN, ping, reset, goaway", async () => {
    const client = new FrameWriter();
    const frames = Buffer.concat([
      await client.synStream(1, [
        ["streamtype", "error"],
        ["port", "80"],
        ["requestid", "0"],
      ]),
      await client.synStream(3, [
        ["streamtype", "data"],
        ["port", "80"],
        ["requestid", "0"],
      ]),
      dataFrame(3, Buffer.from("GET / HTTP/1.1\r\n\r\n")),
      dataFrame(3, Buffer.alloc(0), true),
      pingFrame(1),
      rstStreamFrame(1, 5),
      goAwayFrame(3, 0),
    ]);
    client.close();
    // One byte at a time: the reader waits for whole frames; the header zlib stream carries over between blocks.
    const got = await readAll(...[...frames].map((b) => Buffer.from([b])));
    assert.deepEqual(
      got.map((f) => f.type),
      ["syn_stream", "syn_stream", "data", "data", "ping", "rst_stream", "goaway"],
    );
    const [s1, s3, d, fin, ping, rst] = got;
    assert.ok(s1?.type === "syn_stream" && s3?.type === "syn_stream");
    assert.equal(s1.streamId, 1);
    assert.deepEqual(s1.headers.get("streamtype"), ["error"]);
    assert.deepEqual(s3.headers.get("streamtype"), ["data"]);
    assert.deepEqual(s3.headers.get("requestid"), ["0"]);
    assert.ok(d?.type === "data" && fin?.type === "data");
    assert.equal(d.data.toString(), "GET / HTTP/1.1\r\n\r\n");
    assert.equal(d.fin, false);
    assert.equal(fin.fin, true);
    assert.ok(ping?.type === "ping" && ping.id === 1);
    assert.ok(rst?.type === "rst_stream" && rst.streamId === 1 && rst.status === 5);
  });

  it("a server's SYN_REPLY decodes with the reader's dictionary", async () => {
    const w = new FrameWriter();
    const [reply] = await readAll(await w.synReply(7), await w.synReply(9, [["a", "b"]]));
    w.close();
    assert.ok(reply?.type === "syn_reply" && reply.streamId === 7 && reply.headers.size === 0);
  });

  it("refuses what is not SPDY/3: another version, a truncated connection, garbage in a header block", async () => {
    const v2 = pingFrame(1);
    v2.writeUInt16BE(0x8002, 0);
    await assert.rejects(readAll(v2), /SPDY version 2/);
    await assert.rejects(readAll(pingFrame(1).subarray(0, 10)), /ended inside a frame/);
    const bad = Buffer.concat([Buffer.from([0x80, 3, 0, 1, 0, 0, 0, 14, 0, 0, 0, 1, 0, 0, 0, 0, 0, 0]), Buffer.from("junk")]);
    await assert.rejects(readAll(bad), SpdyProtocolError);
  });
});
