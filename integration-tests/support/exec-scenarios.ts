// pods/exec scenarios with kubectl 1.32 on real pods, shared by the docker
// and process runtimes (integration-tests/exec-*.test.ts).
import assert from "node:assert/strict";
import { execFileSync, spawn } from "node:child_process";
import { randomBytes } from "node:crypto";
import { existsSync, readFileSync, writeFileSync } from "node:fs";
import path from "node:path";
import { after, before, describe, it } from "node:test";
import { waitFor } from "@choreo/kit/testing";
import { withLogsOnFailure } from "./cluster.js";
import { run } from "./kubectl.js";
import { dockerAvailable, startRealCluster, type RealCluster, type RealRuntime } from "./real-cluster.js";

const POD = `apiVersion: v1
kind: Pod
metadata:
  name: shell
spec:
  terminationGracePeriodSeconds: 1
  containers:
  - name: main
    image: local/busybox:1.35
    command: ["sleep", "3600"]
    env: [{name: WHO, value: main}]
  - name: side
    image: local/busybox:1.35
    command: ["sleep", "3600"]
    env: [{name: WHO, value: side}]
---
apiVersion: v1
kind: Pod
metadata:
  name: att
spec:
  terminationGracePeriodSeconds: 1
  containers:
  - name: main
    image: local/busybox:1.35
    command: ["sh", "-c", "while true; do if read l; then echo got $l; else sleep 1; fi; done"]
    stdin: true
---
apiVersion: v1
kind: Pod
metadata:
  name: once
spec:
  restartPolicy: Never
  terminationGracePeriodSeconds: 1
  containers:
  - name: main
    image: local/busybox:1.35
    command: ["sh", "-c", "read l; echo got $l; echo bye"]
    stdin: true
`;

const KUBECTL_120 = "/var/lib/choreo/tools/kubectl-1.20/usr/bin/kubectl";

function tmuxAvailable(): boolean {
  try {
    execFileSync("tmux", ["-V"], { stdio: "ignore" });
    return true;
  } catch {
    return false;
  }
}

/** The exec scenarios on one node of `runtime`. */
export function execScenarios(runtime: RealRuntime): void {
  const skip = runtime === "docker" && !dockerAvailable() ? "docker is not available" : false;
  describe(`kubectl exec on ${runtime} pods`, { skip }, () => {
    let c: RealCluster;
    const kubectl = (args: string[], input?: string) => run("kubectl", args, c.kubeconfig, input !== undefined ? { input } : {});

    /** `kubectl cp` of 1 MB of random bytes into container main (/tmp/<name>.bin) and back out: the bytes come back equal. */
    const cpRoundTrip = async (bin: string, name: string): Promise<void> => {
      const src = path.join(c.dir, `${name}.bin`);
      const back = path.join(c.dir, `${name}.back`);
      const data = randomBytes(1024 * 1024);
      writeFileSync(src, data);
      const cpIn = await run(bin, ["cp", src, `shell:/tmp/${name}.bin`, "-c", "main"], c.kubeconfig);
      assert.equal(cpIn.code, 0, cpIn.stderr);
      const cpOut = await run(bin, ["cp", `shell:/tmp/${name}.bin`, back, "-c", "main"], c.kubeconfig);
      assert.equal(cpOut.code, 0, cpOut.stderr);
      assert.ok(readFileSync(back).equals(data), `${bin}: the bytes came back equal`);
    };

    before(async () => {
      c = await startRealCluster(runtime, { nodes: 1 });
      const applied = await kubectl(["apply", "-f", c.manifest("shell.yaml", POD)]);
      assert.equal(applied.code, 0, applied.stderr);
      await withLogsOnFailure(c, () =>
        waitFor(async () => (await c.pod("shell")).status?.containerStatuses?.filter((s) => s.state?.running).length === 2, {
          timeoutMs: 120_000,
          message: "both containers running",
        }),
      );
    });
    after(async () => {
      if (c) {
        await c.stop();
        assert.deepEqual(c.leftovers(), [], "nothing of the cluster is left on the machine");
      }
    });

    it("a command's stdout, stderr and exit code; -c picks the container; -- args reach the command unchanged", () =>
      withLogsOnFailure(c, async () => {
        const r = await kubectl(["exec", "shell", "-c", "main", "--", "sh", "-c", "echo out; echo err >&2; exit 3"]);
        assert.equal(r.code, 3, `exit code 3: ${r.stderr}`);
        assert.equal(r.stdout, "out\n");
        assert.match(r.stderr, /^err$/m);
        const ok = await kubectl(["exec", "shell", "-c", "main", "--", "sh", "-c", 'echo "$WHO" "$@"', "x", "a b", "--c"]);
        assert.equal(ok.code, 0, ok.stderr);
        assert.equal(ok.stdout, "main a b --c\n");
        const side = await kubectl(["exec", "shell", "-c", "side", "--", "sh", "-c", 'echo "$WHO"']);
        assert.equal(side.stdout, "side\n", side.stderr);
      }));

    it("stdin is piped in and its end reaches the process", () =>
      withLogsOnFailure(c, async () => {
        const r = await kubectl(["exec", "-i", "shell", "-c", "main", "--", "sh", "-c", "cat; echo done"], "hi\nthere\n");
        assert.equal(r.code, 0, r.stderr);
        assert.equal(r.stdout, "hi\nthere\ndone\n");
      }));

    it("a missing container or pod is a clear error and no session", () =>
      withLogsOnFailure(c, async () => {
        const noContainer = await kubectl(["exec", "shell", "-c", "nope", "--", "true"]);
        assert.notEqual(noContainer.code, 0);
        assert.match(noContainer.stderr, /container nope/);
        const noPod = await kubectl(["exec", "nopod", "--", "true"]);
        assert.notEqual(noPod.code, 0);
        assert.match(noPod.stderr, /pods "nopod" not found/);
        const noCommand = await kubectl(["exec", "shell", "-c", "main", "--", "/no/such/binary"]);
        assert.notEqual(noCommand.code, 0, "a command that cannot start fails");
      }));

    it("kubectl cp copies 1 MB of random bytes in and out unchanged", () =>
      withLogsOnFailure(c, async () => {
        await cpRoundTrip("kubectl", "random");
        const size = await kubectl(["exec", "shell", "-c", "main", "--", "wc", "-c", "/tmp/random.bin"]);
        assert.match(size.stdout, /^\s*1048576\s/);
      }));

    it("a kubectl that goes away ends its command in the container", () =>
      withLogsOnFailure(c, async () => {
        const ps = async (): Promise<string> => (await kubectl(["exec", "shell", "-c", "main", "--", "ps", "-o", "args"])).stdout;
        const child = spawn("kubectl", ["exec", "shell", "-c", "main", "--", "sleep", "4321"], {
          env: { ...process.env, KUBECONFIG: c.kubeconfig, HOME: c.dir },
          stdio: "ignore",
        });
        try {
          await waitFor(async () => (await ps()).includes("sleep 4321"), { timeoutMs: 30_000, message: "the command runs" });
          child.kill("SIGKILL");
          await waitFor(async () => !(await ps()).includes("sleep 4321"), { timeoutMs: 60_000, message: "the command is gone" });
        } finally {
          child.kill("SIGKILL");
        }
      }));

    it("kubectl attach -i feeds the container's stdin and shows its output", () =>
      withLogsOnFailure(c, async () => {
        await waitFor(async () => (await c.pod("att")).status?.containerStatuses?.[0]?.state?.running !== undefined, {
          timeoutMs: 120_000,
          message: "att running",
        });
        // stdin stays open a moment: its end ends the attach, and the answers come back before.
        const r = await run("sh", ["-c", "(echo one; echo two; sleep 3) | kubectl attach -i att"], c.kubeconfig);
        assert.equal(r.code, 0, r.stderr);
        assert.match(r.stdout, /got one\ngot two\n/);
        const logs = await kubectl(["logs", "att"]);
        assert.match(logs.stdout, /got two/, "the container itself read it");
        assert.ok((await c.pod("att")).status?.containerStatuses?.[0]?.state?.running, "attach leaves the container running");
      }));

    it("kubectl attach ends when the container exits, though its stdin stays open", () =>
      withLogsOnFailure(c, async () => {
        await waitFor(async () => (await c.pod("once")).status?.containerStatuses?.[0]?.state?.running !== undefined, {
          timeoutMs: 120_000,
          message: "once running",
        });
        const child = spawn("kubectl", ["attach", "-i", "once"], { env: { ...process.env, KUBECONFIG: c.kubeconfig, HOME: c.dir } });
        let out = "";
        child.stdout.on("data", (b: Buffer) => (out += b.toString()));
        const exited = new Promise<number | null>((resolve) => child.once("exit", (code) => resolve(code)));
        try {
          // One line on stdin, which then stays open and silent: only the container's exit can end this attach.
          child.stdin.write("hi\n");
          await waitFor(() => out.includes("bye"), { timeoutMs: 60_000, message: "the container's answer" });
          assert.match(out, /got hi\nbye\n/);
          const code = await Promise.race([exited, new Promise<string>((r) => setTimeout(() => r("still attached"), 30_000))]);
          assert.equal(code, 0, "kubectl attach ends with the container");
        } finally {
          child.kill("SIGKILL");
        }
      }));

    it(
      "kubectl 1.20 speaks SPDY/3.1: stdout, stderr and exit 3; stdin piped; cp of 1 MB in and out; a missing pod",
      { skip: existsSync(KUBECTL_120) ? false : "kubectl 1.20 is not installed" },
      () =>
        withLogsOnFailure(c, async () => {
          const old = (args: string[], input?: string) => run(KUBECTL_120, args, c.kubeconfig, input !== undefined ? { input } : {});
          const r = await old(["exec", "shell", "-c", "main", "--", "sh", "-c", "echo out; echo err >&2; exit 3"]);
          assert.equal(r.code, 3, `exit code 3: ${r.stderr}`);
          assert.equal(r.stdout, "out\n");
          assert.match(r.stderr, /^err$/m);
          const piped = await old(["exec", "-i", "shell", "-c", "main", "--", "sh", "-c", "cat; echo done"], "hi\nthere\n");
          assert.equal(piped.code, 0, piped.stderr);
          assert.equal(piped.stdout, "hi\nthere\ndone\n");
          await cpRoundTrip(KUBECTL_120, "random-120");
          const noPod = await old(["exec", "nopod", "--", "true"]);
          assert.notEqual(noPod.code, 0);
          assert.match(noPod.stderr, /pods "nopod" not found/);
        }),
    );

    for (const [kubectlBin, version] of [
      ["kubectl", "1.32 (WebSocket)"],
      [KUBECTL_120, "1.20 (SPDY/3.1)"],
    ] as const) {
      it(
        `an interactive shell under tmux with kubectl ${version} shows a prompt, runs what is typed and sees the terminal resized`,
        {
          skip: !tmuxAvailable() ? "tmux is not installed" : !existsSync(kubectlBin) && kubectlBin !== "kubectl" ? "this kubectl is not installed" : false,
        },
        () =>
          withLogsOnFailure(c, async () => {
            const session = `choreo-exec-${path.basename(c.dir).replace(/[^a-zA-Z0-9]/g, "")}-${kubectlBin === "kubectl" ? "new" : "old"}`;
            // A tmux server of its own (-L): on the shared default one, another test file's last session ending stops
            // the server while this one starts a session ("server exited unexpectedly", CI).
            const tmux = (...args: string[]): string => execFileSync("tmux", ["-L", session, ...args], { encoding: "utf8" });
            const screen = (): string => tmux("capture-pane", "-p", "-t", session);
            tmux(
              "new-session",
              "-d",
              "-s",
              session,
              "-x",
              "100",
              "-y",
              "30",
              `env KUBECONFIG=${c.kubeconfig} HOME=${c.dir} ${kubectlBin} exec -it shell -c main -- sh; sleep 600`,
            );
            try {
              await waitFor(() => /[#$]\s*$/m.test(screen()), { timeoutMs: 30_000, message: `a prompt: ${screen()}` });
              tmux("send-keys", "-t", session, "echo hello-$WHO; stty size", "Enter");
              await waitFor(() => /^hello-main$/m.test(screen()) && /^30 100$/m.test(screen()), { timeoutMs: 30_000, message: "echo and the first size" });
              tmux("resize-window", "-t", session, "-x", "120", "-y", "40");
              // kubectl sends the new size on SIGWINCH; ask until the shell sees it.
              await waitFor(
                () => {
                  tmux("send-keys", "-t", session, "clear; stty size", "Enter");
                  return /^40 120$/m.test(screen());
                },
                { timeoutMs: 30_000, intervalMs: 500, message: `the resized terminal: ${screen()}` },
              );
              tmux("send-keys", "-t", session, "exit 7", "Enter");
              await waitFor(() => /command terminated with exit code 7/.test(screen()), { timeoutMs: 30_000, message: `the shell exited: ${screen()}` });
            } finally {
              try {
                tmux("kill-session", "-t", session);
              } catch {
                // already gone
              }
            }
          }),
      );
    }
  });
}
