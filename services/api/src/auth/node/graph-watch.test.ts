// test-tier: servers
// PodGraphWatch on a real stack (nats-server, redis-server, the registry):
// the graph follows pods created, bound and deleted through the watch; a
// watch that fails relists; while the bus is away (a deaf watch, stale())
// it relists every poll, so a pod deleted meanwhile stops granting its node.
import assert from "node:assert/strict";
import { after, before, describe, it } from "node:test";
import { expired } from "@choreo/kit";
import { fromKubeJson } from "@choreo/kit/kube-json";
import { silentLogger } from "@choreo/kit/log";
import { waitFor } from "@choreo/kit/testing";
import type { WatchEvent, WatchRequest } from "@choreo/kit/gen/choreo/api/v1/api";
import type { ApiHandlers } from "../../handlers/api-handlers.js";
import { startStack, type Stack } from "../../testing/stack.js";
import { NodeGraph, PodGraphWatch } from "./graph.js";

const pod = (name: string, nodeName: string, secret: string) =>
  fromKubeJson({
    apiVersion: "v1",
    kind: "Pod",
    metadata: { name, namespace: "default" },
    spec: { nodeName, containers: [{ name: "c", image: "busybox", envFrom: [{ secretRef: { name: secret } }] }] },
  });

describe("PodGraphWatch", () => {
  let s: Stack;
  const graph = new NodeGraph();
  let watch: PodGraphWatch;
  const ac = new AbortController();
  let running: Promise<void>;
  let failWatch = 0;
  let deaf = false;
  let stale = false;

  before(async () => {
    s = await startStack();
    await s.client.create(pod("before", "node-1", "early"));
    const registry = s.registry;
    const handlers: Pick<ApiHandlers, "list" | "watch"> = {
      list: (req) => registry.list(req),
      watch(req: WatchRequest, signal: AbortSignal): AsyncIterable<WatchEvent> {
        if (failWatch > 0) {
          failWatch--;
          return (async function* () {
            await Promise.resolve();
            throw expired("too old resource version");
          })();
        }
        return (async function* () {
          for await (const ev of registry.watch(req, signal)) if (!deaf) yield ev;
        })();
      },
    };
    watch = new PodGraphWatch({ handlers, graph, log: silentLogger(), retryMs: 10, stale: () => stale, stalePollMs: 50 });
    assert.equal(watch.synced(), false);
    running = watch.start(ac.signal);
    await watch.waitSynced();
  });
  after(async () => {
    ac.abort();
    await running;
    await s?.stop();
  });

  it("lists the pods there before it started, then follows creates, binds and deletes", async () => {
    assert.equal(watch.lists, 1);
    assert.ok(graph.uses("node-1", "secrets", "default", "early"));
    await s.client.create(pod("later", "node-2", "late"));
    await waitFor(() => graph.uses("node-2", "secrets", "default", "late"), { message: "the new pod's Secret for node-2" });
    await s.client.delete("pods", "default", "before", { gracePeriodSeconds: 0 });
    await waitFor(() => graph.podNode("default", "before") === undefined, { message: "the deleted pod gone" });
    assert.ok(!graph.uses("node-1", "secrets", "default", "early"));
    assert.equal(watch.lists, 1, "no relist while the watch works");
  });

  it("a watch that fails relists and misses nothing", async () => {
    failWatch = 1;
    const lists = watch.lists;
    await s.client.create(pod("during-failure", "node-1", "f"));
    watch.relistNow();
    await waitFor(() => watch.lists >= lists + 2 && graph.uses("node-1", "secrets", "default", "f"), { message: "relisted past the failed watch" });
  });

  it("while stale (the watch deaf), relists every poll: a pod deleted meanwhile stops granting", async () => {
    deaf = true;
    const lists = watch.lists;
    watch.relistNow();
    await waitFor(() => watch.lists > lists, { message: "relisted; the watch from now on deaf" });
    await s.client.delete("pods", "default", "later", { gracePeriodSeconds: 0 });
    assert.ok(graph.uses("node-2", "secrets", "default", "late"), "the deaf watch did not tell");
    stale = true;
    await waitFor(() => !graph.uses("node-2", "secrets", "default", "late"), { message: "the deaf watch's miss caught by a relist" });
    stale = false;
    deaf = false;
  });
});
