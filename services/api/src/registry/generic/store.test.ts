import assert from "node:assert/strict";
import { before, describe, it } from "node:test";
import { unwrap } from "@choreo/kit";
import { fromKubeJson } from "@choreo/kit/kube-json";
import type { Pod } from "@choreo/kit/gen/choreo/core/v1/core";
import { rejects } from "../../testing/api-assert.js";
import { startMemoryRegistry, type MemoryRegistry } from "../../testing/memory-registry.js";
import { testPod } from "../../testing/objects.js";

const pod = testPod;

describe("the generic store: finalizers, paging", () => {
  // On the in-memory storage: the shared verbs, no server needed.
  let s: MemoryRegistry;
  before(async () => {
    s = await startMemoryRegistry();
  });

  it("keeps an object with finalizers until the last one is removed", async () => {
    const p = unwrap(await s.client.create(pod("p-fin", { metadata: { name: "p-fin", namespace: "default", finalizers: ["example.com/hold"] } }))) as Pod;
    assert.deepEqual(p.metadata?.finalizers, ["example.com/hold"]);
    const deleting = unwrap(await s.client.delete("pods", "default", "p-fin")) as Pod;
    assert.ok(deleting.metadata?.deletionTimestamp);
    deleting.metadata!.finalizers = [];
    await s.client.update({ kind: { $case: "pod", value: deleting } });
    await rejects(s.client.get("pods", "default", "p-fin"), 404, "NotFound");
  });
  it("pages lists with limit and continue", async () => {
    const ns = fromKubeJson({ apiVersion: "v1", kind: "Namespace", metadata: { name: "paging" } });
    await s.client.create(ns);
    for (let i = 0; i < 7; i++) await s.client.create(pod(`p${i}`, {}, "paging"));
    const seen: string[] = [];
    let cont = "";
    let pages = 0;
    do {
      const page = await s.client.list("pods", { namespace: "paging", limit: 3, continue: cont });
      seen.push(...page.items.map((o) => unwrap(o).metadata?.name ?? ""));
      cont = page.metadata?.continue ?? "";
      pages++;
    } while (cont);
    assert.deepEqual(seen, ["p0", "p1", "p2", "p3", "p4", "p5", "p6"]);
    assert.equal(pages, 3);
    await rejects(s.client.list("pods", { namespace: "paging", continue: "garbage!" }), 400, "BadRequest", /continue key is not valid/);
  });
});
