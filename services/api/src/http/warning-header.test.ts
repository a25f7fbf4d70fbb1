// An unknown field whose name is not ASCII (a body of random bytes as YAML)
// is reported in a Warning header with \uXXXX escapes; the gateway answered
// 500 (Node refuses a header string past U+00FF) — found by the gateway
// fuzzer. (Kubernetes sends the raw UTF-8 bytes; ASCII reads the same in kubectl.)
import assert from "node:assert/strict";
import http from "node:http";
import { after, before, describe, it } from "node:test";
import { silentLogger } from "@choreo/kit/log";
import { startMemoryRegistry } from "../testing/memory-registry.js";
import { createGateway, type Gateway } from "./gateway.js";

describe("Warning headers", () => {
  let gateway: Gateway;
  let port: number;
  before(async () => {
    const { registry } = await startMemoryRegistry();
    gateway = createGateway({ handlers: registry, log: silentLogger() });
    port = (await gateway.listen({ host: "127.0.0.1", httpPort: 0 })).httpPort ?? 0;
  });
  after(() => gateway.close());

  it("carry a non-ASCII unknown field name escaped", async () => {
    const body = "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: x}\n誚é😀: 1\n";
    const { status, warning } = await new Promise<{ status: number; warning: string }>((resolve, reject) => {
      const req = http.request(
        { host: "127.0.0.1", port, method: "POST", path: "/api/v1/namespaces/default/configmaps", headers: { "Content-Type": "application/yaml" } },
        (res) => {
          res.resume();
          // Node hands header bytes back as latin1 characters.
          res.on("end", () => resolve({ status: res.statusCode ?? 0, warning: Buffer.from(String(res.headers["warning"] ?? ""), "latin1").toString("utf8") }));
        },
      );
      req.on("error", reject);
      req.end(body);
    });
    assert.equal(status, 201);
    assert.equal(warning, String.raw`299 - "unknown field \"\u8a9a\u00e9\ud83d\ude00\""`);
  });
});
