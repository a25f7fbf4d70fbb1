// test-tier: servers
import assert from "node:assert/strict";
import { after, before, describe, it } from "node:test";
import { kindOf, unwrap } from "@choreo/kit";
import { fromKubeJson } from "@choreo/kit/kube-json";
import type { WatchEvent } from "@choreo/kit/gen/choreo/api/v1/api";
import { startStack, type Stack } from "../../testing/stack.js";
import { testPod } from "../../testing/objects.js";

describe("watches served from the watch cache", () => {
  let s: Stack;
  before(async () => {
    s = await startStack();
    await s.client.create(fromKubeJson({ apiVersion: "v1", kind: "Namespace", metadata: { name: "other" } }));
  });
  after(() => s.stop());

  /** The first `n` events of a watch from `rv`, as "TYPE kind ns/name". */
  async function take(req: { resource: string; namespace: string }, rv: string, n: number): Promise<string[]> {
    const stop = new AbortController();
    const got: string[] = [];
    const timer = setTimeout(() => stop.abort(), 10_000);
    try {
      for await (const ev of s.registry.watch(
        { ...req, labelSelector: "", fieldSelector: "", resourceVersion: rv, timeoutSeconds: 0, allowBookmarks: false },
        stop.signal,
      ) as AsyncIterable<WatchEvent>) {
        const v = ev.object ? unwrap(ev.object) : undefined;
        got.push(`${ev.type} ${ev.object ? kindOf(ev.object).kind : "-"} ${v?.metadata?.namespace ?? ""}/${v?.metadata?.name ?? ""}`);
        if (got.length >= n) break;
      }
    } finally {
      clearTimeout(timer);
      stop.abort();
    }
    return got;
  }

  it("hand a watcher its resource's changes in its namespace only, in order, whatever else changes between them", async () => {
    const rv = (await s.client.list("pods")).metadata?.resourceVersion ?? "";
    await s.client.create(fromKubeJson({ apiVersion: "v1", kind: "ConfigMap", metadata: { name: "cm", namespace: "default" } }));
    await s.client.create(testPod("elsewhere", {}, "other"));
    await s.client.create(fromKubeJson({ apiVersion: "v1", kind: "ConfigMap", metadata: { name: "cm", namespace: "other" } }));
    await s.client.create(testPod("here", {}, "default"));
    await s.client.delete("pods", "other", "elsewhere");
    await s.client.create(testPod("last", {}, "default"));
    assert.deepEqual(await take({ resource: "pods", namespace: "default" }, rv, 2), ["ADDED Pod default/here", "ADDED Pod default/last"]);
    assert.deepEqual(await take({ resource: "pods", namespace: "" }, rv, 4), [
      "ADDED Pod other/elsewhere",
      "ADDED Pod default/here",
      "DELETED Pod other/elsewhere",
      "ADDED Pod default/last",
    ]);
    assert.deepEqual(await take({ resource: "configmaps", namespace: "other" }, rv, 1), ["ADDED ConfigMap other/cm"]);
  });
});
