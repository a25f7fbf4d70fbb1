// test-tier: servers
// Init containers in the process runtime: a pod with them starts none, each runs when the agent starts it
// (startContainer), a finished one keeps its log and refuses exec, and a runtime restarted in between (agent
// restart) knows which have not started yet.
import assert from "node:assert/strict";
import { afterEach, describe, it } from "node:test";
import { waitFor } from "@choreo/kit/testing";
import { RuntimeRequestError, type PodRuntimeStatus } from "../runtime.js";
import { ProcessRuntime } from "./process-runtime.js";
import { LoopbackNetwork } from "./test-network.js";
import { BUSYBOX, logText, rig, type TestRig } from "./test-helpers.js";

const reasons = (s: PodRuntimeStatus | undefined): string[] =>
  [...(s?.initContainerStatuses ?? []), ...(s?.containerStatuses ?? [])].map(
    (c) => `${c.name}=${c.state?.waiting?.reason ?? (c.state?.running ? "running" : `exit ${c.state?.terminated?.exitCode}`)}`,
  );

describe("ProcessRuntime init containers", () => {
  let r: TestRig | undefined;
  afterEach(async () => {
    await r?.cleanup();
    r = undefined;
  });

  it("starts nothing until startContainer; a finished init container keeps its log, refuses exec, and is not started again", async () => {
    r = await rig();
    const work = { volumeMounts: [{ name: "work", mountPath: "/work" }] };
    const pod = r.pod("init", {
      volumes: [{ name: "work", emptyDir: {} }],
      initContainers: [
        { name: "first", image: BUSYBOX, command: ["sh", "-c", "echo first >> /work/runs; echo first done"], ...work },
        { name: "second", image: BUSYBOX, command: ["sh", "-c", "echo second >> /work/runs; cat /work/runs"], ...work },
      ],
      containers: [{ name: "app", image: BUSYBOX, command: ["sleep", "300"], ...work }],
    });
    const uid = pod.metadata!.uid;
    const started = await r.rt.startPod(pod);
    assert.deepEqual(reasons(started), ["first=PodInitializing", "second=PodInitializing", "app=PodInitializing"]);
    await assert.rejects(logText(r, uid, { container: "app" }), /is waiting to start: PodInitializing/);

    await r.rt.startContainer(uid, "first");
    await waitFor(() => r!.rt.podStatus(uid)?.initContainerStatuses?.[0]?.state?.terminated, { message: "first ended" });
    await r.rt.startContainer(uid, "first"); // it ran: a no-op
    assert.deepEqual(reasons(r.rt.podStatus(uid)), ["first=exit 0", "second=PodInitializing", "app=PodInitializing"]);
    assert.equal(await logText(r, uid, { container: "first" }), "first done\n");
    await assert.rejects(r.rt.exec(uid, "first", ["true"], 2000), (err: unknown) => err instanceof RuntimeRequestError && /not running/.test(err.message));

    // An agent restart here: the new runtime knows the second and the app have not started (not "exited").
    await r.rt.close();
    const rt2 = new ProcessRuntime({ ...r.opts, network: new LoopbackNetwork(r.opts.network.podCidr) });
    r.rt = rt2;
    await rt2.init();
    assert.deepEqual(reasons(await rt2.adoptPod(pod)), ["first=exit 0", "second=PodInitializing", "app=PodInitializing"]);

    await rt2.startContainer(uid, "second");
    await waitFor(() => rt2.podStatus(uid)?.initContainerStatuses?.[1]?.state?.terminated, { message: "second ended" });
    assert.equal(await logText(r, uid, { container: "second" }), "first\nsecond\n", "the second saw the first's file");
    await rt2.startContainer(uid, "app");
    await waitFor(() => rt2.podStatus(uid)?.containerStatuses[0]?.state?.running, { message: "app running" });
    assert.deepEqual(reasons(rt2.podStatus(uid)), ["first=exit 0", "second=exit 0", "app=running"]);
    assert.equal(rt2.podStatus(uid)?.initContainerStatuses?.[0]?.restartCount, 0);
  });
});
