// The kubectl debug scenarios, run on each runtime (debug.test.ts: docker,
// debug-process.test.ts), with real kubectl 1.32: an ephemeral container
// with --target sees the target container's processes (its `ps` lists them,
// read back with `kubectl logs -c`), shows in `kubectl describe pod`
// (Ephemeral Containers) and can be neither changed nor removed (422);
// `--copy-to` makes a copy of the pod with a debug container beside the
// others; `kubectl debug node/N` is refused (its pod shares the node's
// network, which choreo does not support: 422 before Pod Security's 403).
import assert from "node:assert/strict";
import { spawn } from "node:child_process";
import { writeFileSync } from "node:fs";
import path from "node:path";
import { after, before, describe, it } from "node:test";
import { waitFor } from "@choreo/kit/testing";
import { withLogsOnFailure } from "./cluster.js";
import { run } from "./kubectl.js";
import { dockerAvailable, startRealCluster, type RealCluster, type RealRuntime } from "./real-cluster.js";

const IMAGE = "local/busybox:1.35";
const WAIT = { timeoutMs: 90_000 };
/** What the target container runs: a command line its debugger's `ps` must show. */
const MARK = "sleep 31415";

export function debugScenarios(runtime: RealRuntime): void {
  const skip = runtime === "docker" && !dockerAvailable() ? "docker is not available" : false;
  describe(`kubectl debug (${runtime} nodes)`, { skip }, () => {
    let c: RealCluster;
    const kubectl = async (...args: string[]): Promise<string> => {
      const r = await run("kubectl", args, c.kubeconfig);
      assert.equal(r.code, 0, `kubectl ${args.join(" ")}: ${r.stderr}${r.stdout}`);
      return r.stdout;
    };
    const scenario = (name: string, fn: () => Promise<void>, skip: string | false = false): void => {
      it(name, { skip }, () => withLogsOnFailure(c, fn));
    };

    before(async () => {
      c = await startRealCluster(runtime, { nodes: 1 });
      const manifest = c.manifest(
        "target.yaml",
        `apiVersion: v1
kind: Pod
metadata: {name: target}
spec:
  terminationGracePeriodSeconds: 1
  containers:
  - name: c
    image: ${IMAGE}
    command: ["sh", "-c", "exec ${MARK}"]
`,
      );
      await kubectl("apply", "-f", manifest);
      await kubectl("wait", "--for=condition=Ready", "pod/target", "--timeout=90s");
    });
    after(async () => {
      if (c) {
        await c.stop();
        assert.deepEqual(c.leftovers(), [], "nothing of the cluster is left on the machine");
      }
    });

    scenario("an ephemeral container with --target lists the target's processes, shows in describe, and cannot be changed", async () => {
      const r = await run("kubectl", ["debug", "target", `--image=${IMAGE}`, "--target=c", "--", "ps"], c.kubeconfig);
      assert.equal(r.code, 0, r.stderr);
      const name = await kubectl("get", "pod", "target", "-o", "jsonpath={.spec.ephemeralContainers[0].name}");
      assert.match(name, /^debugger-[a-z0-9]+$/);
      assert.equal(await kubectl("get", "pod", "target", "-o", "jsonpath={.spec.ephemeralContainers[0].targetContainerName}"), "c");

      // It ran once, to completion, and is not started again; its `ps` saw the target's command.
      await waitFor(
        async () => (await kubectl("get", "pod", "target", "-o", "jsonpath={.status.ephemeralContainerStatuses[0].state.terminated.reason}")) === "Completed",
        { ...WAIT, message: "the debugger's ps completed" },
      );
      const ps = await kubectl("logs", "target", "-c", name);
      assert.match(ps, new RegExp(MARK), `the target's process in the debugger's ps:\n${ps}`);
      const status = JSON.parse(await kubectl("get", "pod", "target", "-o", "jsonpath={.status.ephemeralContainerStatuses[0]}")) as Record<string, unknown>;
      assert.equal(status["image"], IMAGE);
      assert.equal(status["restartCount"], 0);
      assert.match(String(status["containerID"]), new RegExp(`^${runtime}://`));
      assert.equal(await kubectl("get", "pod", "target", "-o", "jsonpath={.status.phase}"), "Running", "the pod runs on");

      const described = await kubectl("describe", "pod", "target");
      assert.match(described, /Ephemeral Containers:\n\s+debugger-[a-z0-9]+:/);
      assert.match(described, /Reason:\s+Completed/);

      // PUT to the subresource with the debugger's image changed: 422, nothing changed.
      const pod = JSON.parse(await kubectl("get", "pod", "target", "-o", "json")) as { spec: { ephemeralContainers: { image: string }[] } };
      pod.spec.ephemeralContainers[0]!.image = "local/busybox:other";
      const file = path.join(c.dir, "changed.json");
      writeFileSync(file, JSON.stringify(pod));
      const put = await run("kubectl", ["replace", "--raw", "/api/v1/namespaces/default/pods/target/ephemeralcontainers", "-f", file], c.kubeconfig);
      assert.notEqual(put.code, 0);
      assert.match(put.stderr + put.stdout, /existing ephemeral containers \\?"debugger-[a-z0-9]+\\?" may not be changed/);
      assert.equal(await kubectl("get", "pod", "target", "-o", "jsonpath={.spec.ephemeralContainers[0].image}"), IMAGE);
    });

    scenario(
      "kubectl debug -i attaches to the new ephemeral container: stdin reaches it, its output (the target's processes) comes back",
      async () => {
        // stdin stays open until the output is back (kubectl ends the attach when its stdin ends).
        const child = spawn("kubectl", ["debug", "-i", "target", `--image=${IMAGE}`, "--target=c", "--", "sh", "-c", "read line; echo got $line; ps"], {
          env: { ...process.env, KUBECONFIG: c.kubeconfig, HOME: path.dirname(c.kubeconfig) },
          stdio: ["pipe", "pipe", "pipe"],
        });
        let out = "";
        child.stdout.on("data", (b: Buffer) => (out += b.toString()));
        child.stderr.on("data", (b: Buffer) => (out += b.toString()));
        const exited = new Promise<number | null>((resolve) => child.once("exit", resolve));
        try {
          child.stdin.write("hello\n");
          await waitFor(() => out.includes("got hello") && out.includes(MARK), { ...WAIT, message: "the debugger's output through the attach" });
        } finally {
          child.stdin.end();
        }
        assert.equal(await exited, 0, out);
        assert.equal(await kubectl("get", "pod", "target", "-o", "jsonpath={.spec.ephemeralContainers[*].stdin}"), "true", "the second one keeps stdin open");
      },
      // The process runtime gives containers no stdin and serves no attach (yet).
      runtime === "process" ? "the process runtime serves no attach" : false,
    );

    scenario("--copy-to creates a copy of the pod with the debug container beside the others", async () => {
      await kubectl("debug", "target", "--copy-to=target-copy", "--container=dbg", `--image=${IMAGE}`, "--", "sleep", "3600");
      await kubectl("wait", "--for=condition=Ready", "pod/target-copy", "--timeout=90s");
      assert.equal(await kubectl("get", "pod", "target-copy", "-o", "jsonpath={.spec.containers[*].name}"), "c dbg");
      assert.equal(await kubectl("get", "pod", "target-copy", "-o", "jsonpath={.spec.ephemeralContainers}"), "");
      await kubectl("delete", "pod", "target-copy", "--wait=false");
    });

    scenario("kubectl debug node/N is refused with a clear 422 (hostNetwork)", async () => {
      const r = await run("kubectl", ["debug", `node/${c.nodes[0]!}`, `--image=${IMAGE}`, "--", "true"], c.kubeconfig);
      assert.notEqual(r.code, 0);
      assert.match(r.stderr, /is invalid: .*spec\.hostNetwork: Unsupported value: true/);
      assert.doesNotMatch(await kubectl("get", "pods", "-o", "name"), /node-debugger/, "no node debugger pod was made");
    });
  });
}
