// test-tier: servers
// A real node's config volumes follow the api's body-less change notices at
// once, heard with the node's own NATS user (which may not read ConfigMap
// events): the period is an hour here, so only a notice can bring the change.
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { after, before, describe, it } from "node:test";
import type { NatsConnection } from "@nats-io/transport-node";
import type { ApiClient } from "@choreo/kit/client";
import { connectBus } from "@choreo/kit/bus";
import { Pod } from "@choreo/kit/gen/choreo/core/v1/core";
import { silentLogger } from "@choreo/kit/log";
import { nodeNatsPermissions } from "@choreo/kit/secrets";
import { startNats, waitFor, type NatsHandle } from "@choreo/kit/testing";
import { HollowRuntime } from "../runtime/hollow.js";
import { withConfigSources } from "./config-runtime.js";
import type { Lookup, SourceData } from "./resolve.js";

const te = new TextEncoder();

describe("config volumes follow change notices (real nats-server, the node's NATS user)", () => {
  let nats: NatsHandle;
  let api: NatsConnection;
  let node: NatsConnection;
  const tmp = fs.mkdtempSync(path.join(os.tmpdir(), "config-notices-"));
  before(async () => {
    nats = await startNats();
    api = await connectBus(nats.url, "api");
    node = await connectBus(nats.address, "node-1", await nats.addUser("node-node-1", nodeNatsPermissions("node-1")));
  });
  after(async () => {
    await node?.close();
    await api?.close();
    await nats?.stop();
    fs.rmSync(tmp, { recursive: true, force: true });
  });

  it("a ConfigMap's notice rewrites the mounted file long before the resync period", async () => {
    const cms = new Map<string, Record<string, string>>([["cfg", { "app.conf": "v1" }]]);
    const data = (o: Record<string, string> | undefined): SourceData | undefined =>
      o && { strings: new Map(Object.entries(o)), files: new Map(Object.entries(o).map(([k, v]) => [k, te.encode(v)])) };
    const lookup = (): Lookup => ({ configMap: (n) => Promise.resolve(data(cms.get(n))), secret: () => Promise.resolve(undefined) });
    const inner = new HollowRuntime({ podCidr: "10.244.11.0/24", startDelayMs: 5 });
    const rt = withConfigSources(inner, {
      client: undefined as unknown as ApiClient,
      pods: { get: () => undefined },
      stateDir: path.join(tmp, "node"),
      allocatable: { cpu: "2", memory: "1Gi" },
      events: { emit: () => undefined },
      log: silentLogger(),
      resyncMs: 3_600_000,
      lookup,
      nc: node,
    });
    await rt.init();
    try {
      const pod = Pod.fromPartial({
        metadata: { name: "b", namespace: "default", uid: "uid-b" },
        spec: { nodeName: "node-1", containers: [{ name: "app", image: "i" }], volumes: [{ name: "conf", configMap: { name: "cfg", items: [] } }] },
      });
      await rt.startPod(pod);
      const file = path.join(tmp, "node", "config-volumes", "uid-b", "conf", "app.conf");
      await waitFor(() => fs.existsSync(file) && fs.readFileSync(file, "utf8") === "v1", { timeoutMs: 30_000, message: "the volume written" });
      await node.flush();
      cms.set("cfg", { "app.conf": "v2" });
      api.publish("choreo.notice.configmaps.default.cfg");
      await waitFor(() => fs.readFileSync(file, "utf8") === "v2", { timeoutMs: 30_000, message: "the file follows the notice" });
    } finally {
      await rt.close();
    }
  });
});
