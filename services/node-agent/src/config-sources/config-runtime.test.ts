import assert from "node:assert/strict";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { after, describe, it } from "node:test";
import type { ApiClient } from "@choreo/kit/client";
import { Pod, type ObjectReference } from "@choreo/kit/gen/choreo/core/v1/core";
import { waitFor } from "@choreo/kit/testing";
import { HollowRuntime } from "../runtime/hollow.js";
import { withConfigSources, isHeldBack } from "./config-runtime.js";
import type { Lookup, SourceData } from "./resolve.js";
import { silentLogger } from "@choreo/kit/log";

const te = new TextEncoder();
const tmp = fs.mkdtempSync(path.join(os.tmpdir(), "config-runtime-"));
after(() => fs.rmSync(tmp, { recursive: true, force: true }));

/** A namespace whose ConfigMaps the test edits (a fake of the api: the lookups are what is under test here, not the api). */
function namespace() {
  const cms = new Map<string, Record<string, string>>();
  const data = (o: Record<string, string> | undefined): SourceData | undefined =>
    o && { strings: new Map(Object.entries(o)), files: new Map(Object.entries(o).map(([k, v]) => [k, te.encode(v)])) };
  const lookup = (): Lookup => ({ configMap: (n) => Promise.resolve(data(cms.get(n))), secret: () => Promise.resolve(undefined) });
  return { cms, lookup };
}

const pod = (name: string, spec: Record<string, unknown>): Pod =>
  Pod.fromPartial({ metadata: { name, namespace: "default", uid: `uid-${name}` }, spec: { nodeName: "n", ...spec } });

describe("withConfigSources", () => {
  it("holds a pod whose ConfigMap is missing (CreateContainerConfigError), names a missing key, starts it when both appear", async () => {
    const ns = namespace();
    const events: [string, string][] = [];
    const inner = new HollowRuntime({ podCidr: "10.244.9.0/24", startDelayMs: 5 });
    const rt = withConfigSources(inner, {
      client: undefined as unknown as ApiClient, // every read goes through `lookup`
      pods: { get: () => undefined },
      allocatable: { cpu: "2", memory: "1Gi" },
      events: { emit: (_r: ObjectReference, _t, reason, message) => void events.push([reason, message]) },
      log: silentLogger(),
      resyncMs: 50,
      lookup: ns.lookup,
    });
    const changed: string[] = [];
    rt.onChange((p) => changed.push(p.name));
    await rt.init();
    try {
      const p = pod("a", { containers: [{ name: "app", image: "i", env: [{ name: "G", valueFrom: { configMapKeyRef: { name: "cfg", key: "greeting" } } }] }] });
      const st = await rt.startPod(p);
      assert.ok(isHeldBack(st));
      assert.deepEqual(st.containerStatuses[0]?.state?.waiting, { reason: "CreateContainerConfigError", message: 'configmap "cfg" not found' });
      assert.equal(rt.podStatus("uid-a"), st);
      assert.deepEqual(
        rt.listPods().map((x) => x.name),
        ["a"],
      );
      assert.equal(inner.podStatus("uid-a"), undefined, "nothing started");

      ns.cms.set("cfg", { other: "x" });
      await waitFor(() => rt.podStatus("uid-a")?.containerStatuses[0]?.state?.waiting?.message === "couldn't find key greeting in ConfigMap default/cfg", {
        timeoutMs: 30_000,
        message: "the missing key named",
      });
      ns.cms.set("cfg", { greeting: "hello" });
      await waitFor(() => inner.podStatus("uid-a"), { timeoutMs: 30_000, message: "started once the key exists" });
      assert.ok(changed.includes("a"), "the agent is told");
      assert.equal(isHeldBack(rt.podStatus("uid-a")!), false);
      await rt.stopPod({ uid: "uid-a", namespace: "default", name: "a" }, 0);
      assert.deepEqual(rt.listPods(), []);
    } finally {
      await rt.close();
    }
  });

  it("writes a pod's configMap volume before it starts, refreshes it when the ConfigMap changes, removes it when the pod stops", async () => {
    const ns = namespace();
    const events: [string, string][] = [];
    const stateDir = path.join(tmp, "node");
    const inner = new HollowRuntime({ podCidr: "10.244.10.0/24", startDelayMs: 5 });
    const rt = withConfigSources(inner, {
      client: undefined as unknown as ApiClient,
      pods: { get: () => undefined },
      stateDir,
      allocatable: { cpu: "2", memory: "1Gi" },
      events: { emit: (_r: ObjectReference, _t, reason, message) => void events.push([reason, message]) },
      log: silentLogger(),
      resyncMs: 50,
      lookup: ns.lookup,
    });
    await rt.init();
    try {
      const p = pod("b", { containers: [{ name: "app", image: "i" }], volumes: [{ name: "conf", configMap: { name: "cfg", items: [] } }] });
      const st = await rt.startPod(p);
      assert.equal(st.containerStatuses[0]?.state?.waiting?.reason, "ContainerCreating");
      assert.deepEqual(events.at(-1), ["FailedMount", 'MountVolume.SetUp failed for volume "conf" : configmap "cfg" not found']);

      ns.cms.set("cfg", { "app.conf": "v1" });
      await waitFor(() => inner.podStatus("uid-b"), { timeoutMs: 30_000, message: "started once the ConfigMap exists" });
      const file = path.join(stateDir, "config-volumes", "uid-b", "conf", "app.conf");
      assert.equal(fs.readFileSync(file, "utf8"), "v1");
      assert.equal(fs.statSync(path.join(stateDir, "config-volumes", "uid-b")).mode & 0o777, 0o700);
      ns.cms.set("cfg", { "app.conf": "v2" });
      await waitFor(() => fs.readFileSync(file, "utf8") === "v2", { timeoutMs: 30_000, message: "the file follows the ConfigMap" });
      await rt.stopPod({ uid: "uid-b", namespace: "default", name: "b" }, 0);
      assert.equal(fs.existsSync(path.join(stateDir, "config-volumes", "uid-b")), false);
    } finally {
      await rt.close();
    }
  });
});
