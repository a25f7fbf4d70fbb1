import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { fromKubeJson } from "@choreo/kit/kube-json";
import { Object as ObjectMsg, Reply } from "@choreo/kit/gen/choreo/api/v1/api";
import { encode, encodeWith } from "./encode.js";

const cm = (name: string, size: number) =>
  fromKubeJson({ apiVersion: "v1", kind: "ConfigMap", metadata: { name, namespace: "default", labels: { a: "b" } }, data: { k: "x".repeat(size) } });

describe("encoding with the shared writer", () => {
  it("gives the bytes a fresh writer gives, message after message of any size", () => {
    for (const size of [0, 10, 5_000, 100, 2_000_000, 3, 70_000, 1]) {
      const o = cm(`c${size}`, size);
      const got = encode(ObjectMsg, o);
      assert.deepEqual(got, ObjectMsg.encode(o).finish(), `size ${size}`);
      assert.deepEqual(ObjectMsg.decode(got), ObjectMsg.decode(ObjectMsg.encode(o).finish()));
    }
  });

  it("hands out copies: bytes given earlier are not overwritten by the next message", () => {
    const a = encode(ObjectMsg, cm("a", 50));
    const copy = Uint8Array.from(a);
    encode(ObjectMsg, cm("b", 60));
    assert.deepEqual(a, copy);
  });

  it("chained writes and a write that threw midway leave the next message whole", () => {
    const o = cm("x", 10);
    const chained = encodeWith((w) =>
      ObjectMsg.encode(o, w)
        .uint32((7 << 3) | 0)
        .uint32(1),
    );
    const fresh = ObjectMsg.encode(o)
      .uint32((7 << 3) | 0)
      .uint32(1)
      .finish();
    assert.deepEqual(chained, fresh);
    assert.throws(() =>
      encodeWith((w) => {
        w.fork().string("half");
        throw new Error("midway");
      }),
    );
    const reply = { result: { $case: "object" as const, value: o } };
    assert.deepEqual(encode(Reply, reply), Reply.encode(reply).finish());
  });
});
