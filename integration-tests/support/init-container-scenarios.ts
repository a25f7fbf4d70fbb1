// The scenarios of init containers on real nodes, run on each runtime
// (init-containers.test.ts: docker, init-containers-process.test.ts):
// they run one at a time in order, each to completion, before the app
// containers, sharing the pod's emptyDir; a failure follows the pod's
// restartPolicy; a node agent killed -9 between them and the app does not
// run them again. Seen through real kubectl.
import assert from "node:assert/strict";
import { execFileSync } from "node:child_process";
import { existsSync, readFileSync, writeFileSync } from "node:fs";
import path from "node:path";
import { after, before, describe, it } from "node:test";
import type { Pod } from "@choreo/kit/gen/choreo/core/v1/core";
import { waitFor } from "@choreo/kit/testing";
import { LABELS } from "@choreo/node-agent/net/types";
import { withLogsOnFailure } from "./cluster.js";
import { run } from "./kubectl.js";
import { dockerAvailable, startRealCluster, type RealCluster, type RealRuntime } from "./real-cluster.js";

const WAIT = { timeoutMs: 90_000 };
const IMAGE = "local/busybox:1.35";

/** A busybox container running `script`, the pod's emptyDir `work` on /work. */
const container = (name: string, script: string): string => `  - name: ${name}
    image: ${IMAGE}
    command: ["sh", "-c", ${JSON.stringify(script)}]
    volumeMounts: [{name: work, mountPath: /work}]
`;

/** A pod with an emptyDir `work`, init containers and one app container, each `[name, script]`. */
const initPod = (name: string, policy: string, inits: [string, string][], app: [string, string]): string => `apiVersion: v1
kind: Pod
metadata:
  name: ${name}
spec:
  restartPolicy: ${policy}
  terminationGracePeriodSeconds: 1
  volumes: [{name: work, emptyDir: {}}]
  initContainers:
${inits.map(([n, s]) => container(n, s)).join("")}  containers:
${container(app[0], app[1])}`;

/** Each container notes its run in /work/runs: the count of runs across agent restarts. */
const note = (name: string): string => `echo ${name} >> /work/runs`;
/** Waits until the test drops `file` into the pod's emptyDir from the node (a gate the test opens). */
const gate = (file: string): string => `until [ -f /work/${file} ]; do sleep 0.2; done`;
const SERVE = `${note("web")}; exec httpd -f -p 8080 -h /work`;

async function get(url: string): Promise<string | undefined> {
  try {
    const r = await fetch(url, { signal: AbortSignal.timeout(3_000) });
    return r.ok ? (await r.text()).trim() : undefined;
  } catch {
    return undefined;
  }
}

export function initContainerScenarios(runtime: RealRuntime): void {
  const skip = runtime === "docker" && !dockerAvailable() ? "no Docker engine answers on this machine" : false;
  describe(`init containers on the ${runtime} runtime`, { skip }, () => {
    let c: RealCluster;
    const scenario = (name: string, fn: () => Promise<void>): void => {
      it(name, () => withLogsOnFailure(c, fn));
    };
    const kubectl = async (...args: string[]): Promise<string> => {
      const r = await run("kubectl", args, c.kubeconfig);
      assert.equal(r.code, 0, `kubectl ${args.join(" ")}: ${r.stderr}`);
      return r.stdout;
    };
    /** The STATUS column of `kubectl get pods NAME`. */
    const statusColumn = async (name: string): Promise<string> => (await kubectl("get", "pods", name, "--no-headers")).trim().split(/\s+/)[2] ?? "";
    const podWhere = (name: string, ok: (p: Pod) => boolean, message: string): Promise<Pod> =>
      waitFor(
        async () => {
          const p = await c.pod(name);
          return ok(p) ? p : undefined;
        },
        { ...WAIT, message },
      );
    /** The pod's emptyDir `work` on its node (`<state dir>/<node>/pods/<uid>/volumes/work`). */
    const workDir = (p: Pod): string => path.join(c.dir, "nodes", p.spec!.nodeName, "pods", p.metadata!.uid, "volumes", "work");
    const runs = (p: Pod): string[] =>
      readFileSync(path.join(workDir(p), "runs"), "utf8")
        .split("\n")
        .filter(Boolean);
    const open = (p: Pod, file: string): void => writeFileSync(path.join(workDir(p), file), "");
    /** Whether init container `name`'s first run ended on the node (read from the runtime while its agent is dead). */
    const endedOnNode = (p: Pod, name: string): boolean => {
      if (runtime === "process") return existsSync(path.join(c.dir, "nodes", p.spec!.nodeName, "pods", p.metadata!.uid, name, "0.exit"));
      const out = execFileSync(
        "docker",
        ["ps", "-a", "--filter", `label=${LABELS.podUid}=${p.metadata!.uid}`, "--filter", `label=${LABELS.container}=${name}`, "--format", "{{.State}}"],
        {
          encoding: "utf8",
        },
      );
      return out.trim() === "exited";
    };
    const initState = (p: Pod, i: number) => p.status?.initContainerStatuses[i]?.state;

    before(async () => {
      c = await startRealCluster(runtime, { nodes: 1 });
    });
    after(async () => {
      if (!c) return;
      await c.stop();
      assert.deepEqual(c.leftovers(), [], "nothing of the cluster is left on the machine");
    });

    scenario("two init containers run in order, each to completion (the second sees the first's file), then the app serves what they wrote", async () => {
      await kubectl(
        "apply",
        "-f",
        c.manifest(
          "web.yaml",
          initPod(
            "web",
            "Always",
            [
              ["first", `${note("first")}; ${gate("go")}; echo 'written by first' > /work/index.html; echo first done`],
              [
                "second",
                `${note("second")}; grep -q 'written by first' /work/index.html || exit 9; echo 'and by second' >> /work/index.html; echo second done`,
              ],
            ],
            ["web", SERVE],
          ),
        ),
      );
      // The first waits for the gate: the pod shows it is initializing, the app has not started.
      const initializing = await podWhere("web", (p) => Boolean(initState(p, 0)?.running), "the first init container running");
      assert.equal(initializing.status?.phase, "Pending");
      assert.equal(initState(initializing, 1)?.waiting?.reason, "PodInitializing");
      assert.equal(initializing.status?.containerStatuses[0]?.state?.waiting?.reason, "PodInitializing");
      const initialized = initializing.status?.conditions.find((x) => x.type === "Initialized");
      assert.deepEqual([initialized?.status, initialized?.reason], ["False", "ContainersNotInitialized"]);
      assert.equal(await statusColumn("web"), "Init:0/2");
      // Running is the runtime's word once the process started; its first line, the note, may come a moment later.
      const noted = path.join(workDir(initializing), "runs");
      await waitFor(() => existsSync(noted) && readFileSync(noted, "utf8").endsWith("\n"), { ...WAIT, message: "the first init container noted its run" });
      assert.deepEqual(runs(initializing), ["first"]);

      open(initializing, "go");
      const running = await podWhere("web", (p) => p.status?.phase === "Running" && Boolean(p.status.containerStatuses[0]?.ready), "web Running and ready");
      const body = await waitFor(() => get(`http://${running.status!.podIp}:8080/index.html`), { ...WAIT, message: "web serving" });
      assert.equal(body, "written by first\nand by second");
      assert.deepEqual(runs(running), ["first", "second", "web"], "each ran once, in order");
      assert.deepEqual(
        running.status?.initContainerStatuses.map((s) => [s.name, s.state?.terminated?.reason, s.state?.terminated?.exitCode, s.ready, s.restartCount]),
        [
          ["first", "Completed", 0, true, 0],
          ["second", "Completed", 0, true, 0],
        ],
      );
      assert.equal(running.status?.conditions.find((x) => x.type === "Initialized")?.status, "True");
      assert.equal(await statusColumn("web"), "Running");
      assert.equal((await kubectl("logs", "web", "-c", "first")).trim(), "first done");
      assert.equal((await kubectl("logs", "web", "-c", "second")).trim(), "second done");
      await kubectl("delete", "pod", "web", "--wait=false");
    });

    scenario("a failing init container under restartPolicy Never fails the pod (Init:Error); the app never starts", async () => {
      await kubectl("apply", "-f", c.manifest("doomed.yaml", initPod("doomed", "Never", [["setup", `${note("setup")}; echo boom; exit 3`]], ["web", SERVE])));
      const failed = await podWhere("doomed", (p) => p.status?.phase === "Failed", "doomed Failed");
      assert.equal(initState(failed, 0)?.terminated?.exitCode, 3);
      assert.equal(initState(failed, 0)?.terminated?.reason, "Error");
      assert.equal(failed.status?.containerStatuses[0]?.state?.waiting?.reason, "PodInitializing", "the app never started");
      assert.equal(await statusColumn("doomed"), "Init:Error");
      assert.equal((await kubectl("logs", "doomed", "-c", "setup")).trim(), "boom");
      assert.deepEqual(runs(failed), ["setup"]);
      await kubectl("delete", "pod", "doomed", "--wait=false");
    });

    scenario(
      "a failing init container under restartPolicy Always restarts with back-off (restartCount grows, Init:CrashLoopBackOff); the app waits",
      async () => {
        await kubectl("apply", "-f", c.manifest("flaky.yaml", initPod("flaky", "Always", [["setup", `${note("setup")}; exit 1`]], ["web", SERVE])));
        // The agents' back-off here is 1 s doubling: the third restart waits 4 s in CrashLoopBackOff.
        const looping = await podWhere(
          "flaky",
          (p) => (p.status?.initContainerStatuses[0]?.restartCount ?? 0) >= 2 && initState(p, 0)?.waiting?.reason === "CrashLoopBackOff",
          "setup restarted twice, then backing off",
        );
        assert.equal(looping.status?.phase, "Pending");
        assert.equal(looping.status?.initContainerStatuses[0]?.lastState?.terminated?.exitCode, 1);
        assert.equal(looping.status?.containerStatuses[0]?.state?.waiting?.reason, "PodInitializing", "the app waits");
        assert.match(await statusColumn("flaky"), /^Init:(CrashLoopBackOff|Error)$/);
        assert.ok(!runs(looping).includes("web"), "the app never started");
        await kubectl("delete", "pod", "flaky", "--wait=false");
      },
    );

    scenario("a node agent killed -9 between the init containers and the app: on restart they do not run again, and the app starts", async () => {
      await kubectl(
        "apply",
        "-f",
        c.manifest(
          "resume.yaml",
          initPod(
            "resume",
            "Always",
            [
              ["first", `${note("first")}; echo one > /work/index.html`],
              ["second", `${note("second")}; ${gate("go")}; echo two >> /work/index.html`],
            ],
            ["web", SERVE],
          ),
        ),
      );
      const second = await podWhere("resume", (p) => Boolean(initState(p, 1)?.running), "the second init container running");
      await c.killNode(0);
      // The second completes while its agent is dead.
      open(second, "go");
      await waitFor(() => endedOnNode(second, "second"), { ...WAIT, message: "the second init container ended on the node" });
      await c.startNode(0);
      const running = await podWhere("resume", (p) => p.status?.phase === "Running" && Boolean(p.status.containerStatuses[0]?.ready), "resume Running");
      assert.equal(await waitFor(() => get(`http://${running.status!.podIp}:8080/index.html`), { ...WAIT, message: "resume serving" }), "one\ntwo");
      assert.deepEqual(runs(running), ["first", "second", "web"], "no init container ran again");
      assert.deepEqual(
        running.status?.initContainerStatuses.map((s) => [s.state?.terminated?.exitCode, s.restartCount]),
        [
          [0, 0],
          [0, 0],
        ],
      );
      await kubectl("delete", "pod", "resume", "--wait=false");
    });
  });
}
