// A malformed percent-escape in a path is a 404 Status, on every door
// (found by the gateway fuzzer: the autoscaling/v1 HPA door decoded its
// namespace and name unguarded, and answered 500 URIError).
import assert from "node:assert/strict";
import { after, before, describe, it } from "node:test";
import { silentLogger } from "@choreo/kit/log";
import { startMemoryRegistry } from "../testing/memory-registry.js";
import { createGateway, type Gateway } from "./gateway.js";
import { call } from "./testing/harness.js";

describe("malformed percent-escapes in paths", () => {
  let gateway: Gateway;
  let base: string;
  before(async () => {
    const { registry } = await startMemoryRegistry();
    gateway = createGateway({ handlers: registry, log: silentLogger() });
    const { httpPort } = await gateway.listen({ host: "127.0.0.1", httpPort: 0 });
    base = `http://127.0.0.1:${httpPort}`;
  });
  after(() => gateway.close());

  it("answers 404 NotFound, never 500", async () => {
    const paths = [
      "/apis/autoscaling/v1/namespaces/default/horizontalpodautoscalers/%",
      "/apis/autoscaling/v1/namespaces/%zz/horizontalpodautoscalers",
      "/apis/autoscaling/v1/namespaces/default/horizontalpodautoscalers/%e2%82",
      "/api/v1/namespaces/default/pods/%",
      "/api/v1/namespaces/%zz/pods",
      "/apis/apps/v1/namespaces/default/deployments/%c0/scale",
    ];
    for (const path of paths) {
      for (const method of ["GET", "PATCH", "PUT", "DELETE", "POST"]) {
        const r = await call(base, method, path, { body: "{}", headers: { "Content-Type": "application/merge-patch+json" } });
        assert.equal(r.status, 404, `${method} ${path}: ${r.text}`);
        assert.equal(r.json["kind"], "Status");
      }
    }
  });
});
