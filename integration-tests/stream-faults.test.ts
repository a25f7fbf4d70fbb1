// test-tier: servers
// Streams into pods through faults, on one process-runtime node: kill -9 of
// the api, of the node agent and of nats-server while a port-forward holds
// a connection into a pod and an exec runs a command in it → the node frees
// what the stream held (the pod's connection closes, the command ends), the
// pod keeps running, and a new kubectl port-forward / exec works within
// seconds of the component coming back. A nats-server outage stops the
// streams (core NATS keeps nothing it could not deliver: kit bus-stream); a
// redis-server outage does not touch them.
import assert from "node:assert/strict";
import { spawn, type ChildProcess } from "node:child_process";
import { connect, type Socket } from "node:net";
import { setTimeout as sleep } from "node:timers/promises";
import { after, before, describe, it } from "node:test";
import { waitFor } from "@choreo/kit/testing";
import { withLogsOnFailure } from "./support/cluster.js";
import { run } from "./support/kubectl.js";
import { startRealCluster, type RealCluster } from "./support/real-cluster.js";

const POD = `apiVersion: v1
kind: Pod
metadata:
  name: web
spec:
  terminationGracePeriodSeconds: 1
  containers:
  - name: a
    image: local/busybox:1.35
    command: ["sh", "-c", "mkdir -p /www && echo web-8080 > /www/index.html && exec httpd -f -p 8080 -h /www"]
`;

/** What a stream's end must take at most once its api or agent is gone: the bus stream's idle timeout (15 s) and margin. */
const FREED_MS = 45_000;

describe("port-forward and exec through kill -9 of the api, the node agent and nats-server", () => {
  let c: RealCluster;
  const kubectl = (args: string[]) => run("kubectl", args, c.kubeconfig);
  const children: ChildProcess[] = [];
  const sockets: Socket[] = [];
  let uid = "";

  /** ESTABLISHED connections to :8080 inside the pod. */
  const established = async (): Promise<number> => {
    const r = await kubectl(["exec", "web", "--", "netstat", "-tn"]);
    if (r.code !== 0) return -1;
    return r.stdout.split("\n").filter((l) => l.includes("ESTABLISHED") && /:8080\s/.test(`${l.split(/\s+/)[3] ?? ""} `)).length;
  };
  /** Whether `sleep <tag>` runs in the pod. */
  const running = async (tag: string): Promise<boolean> => (await kubectl(["exec", "web", "--", "ps", "-o", "args"])).stdout.includes(`sleep ${tag}`);

  /** A `kubectl port-forward pod/web :8080` and its local port. */
  const forward = async (): Promise<{ pf: ChildProcess; port: number }> => {
    const pf = spawn("kubectl", ["port-forward", "--address", "127.0.0.1", "pod/web", ":8080"], {
      env: { ...process.env, KUBECONFIG: c.kubeconfig, HOME: c.dir },
      stdio: ["ignore", "pipe", "ignore"],
    });
    children.push(pf);
    let out = "";
    pf.stdout?.on("data", (b: Buffer) => (out += b.toString()));
    const port = await waitFor(() => Number(/127\.0\.0\.1:(\d+) ->/.exec(out)?.[1] ?? 0) || undefined, {
      timeoutMs: 60_000,
      message: "port-forward listening",
    });
    return { pf, port };
  };

  /** A kubectl port-forward with a connection held through it, and a kubectl exec running `sleep <tag>`. */
  const openStreams = async (tag: string): Promise<{ socket: Socket; pf: ChildProcess; ex: ChildProcess }> => {
    const { pf, port } = await forward();
    const socket = await new Promise<Socket>((resolve, reject) => {
      const s = connect({ host: "127.0.0.1", port }, () => resolve(s));
      s.on("error", reject);
    });
    socket.on("error", () => undefined);
    sockets.push(socket);
    socket.write("GET / HTTP/1.1\r\nHost: x\r\n");
    const ex = spawn("kubectl", ["exec", "web", "--", "sleep", tag], { env: { ...process.env, KUBECONFIG: c.kubeconfig, HOME: c.dir }, stdio: "ignore" });
    children.push(ex);
    await waitFor(async () => (await established()) >= 1 && (await running(tag)), { timeoutMs: 60_000, message: "the forwarded connection and the command" });
    return { socket, pf, ex };
  };

  /** The streams' node-side halves are gone, the pod is the same one, and new streams work. */
  const freedAndWorking = async (tag: string, fault: string): Promise<void> => {
    const t = Date.now();
    await waitFor(async () => (await established()) === 0 && !(await running(tag)), {
      timeoutMs: FREED_MS,
      intervalMs: 1_000,
      message: `after ${fault}: the pod's connection closed and the command ended`,
    });
    console.log(`${fault}: the node freed the streams ${((Date.now() - t) / 1000).toFixed(1)} s after the component was back`);
    assert.equal((await c.pod("web")).metadata?.uid, uid, "the pod was not replaced");
    const t2 = Date.now();
    await waitFor(
      async () => {
        const r = await kubectl(["exec", "web", "--", "echo", "ok"]);
        return r.code === 0 && r.stdout === "ok\n";
      },
      { timeoutMs: 60_000, message: `after ${fault}: a new exec works` },
    );
    const { pf, port } = await forward();
    const body = await (await fetch(`http://127.0.0.1:${port}/`, { signal: AbortSignal.timeout(30_000) })).text();
    assert.equal(body, "web-8080\n", `after ${fault}: a new port-forward answers`);
    console.log(`${fault}: new exec and port-forward working ${((Date.now() - t2) / 1000).toFixed(1)} s later`);
    pf.kill("SIGKILL");
  };

  before(async () => {
    c = await startRealCluster("process", { nodes: 1 });
    const applied = await kubectl(["apply", "-f", c.manifest("web.yaml", POD)]);
    assert.equal(applied.code, 0, applied.stderr);
    const pod = await withLogsOnFailure(c, () =>
      waitFor(async () => ((await c.pod("web")).status?.containerStatuses?.[0]?.ready ? c.pod("web") : undefined), {
        timeoutMs: 120_000,
        message: "web ready",
      }),
    );
    uid = pod.metadata?.uid ?? "";
  });
  after(async () => {
    for (const s of sockets) s.destroy();
    for (const ch of children) ch.kill("SIGKILL");
    if (c) await c.stop();
  });

  for (const [what, tag, fault, restart, how] of [
    ["the api", "1111", () => c.killApi(0), () => c.startApi(0), "the node agent ends the streams it served (silence), and the restarted api serves new ones"],
    [
      "the node agent",
      "2222",
      () => c.killNode(0),
      () => c.startNode(0),
      "its relays die with it, the pod keeps running, its restarted agent serves new streams",
    ],
  ] as const) {
    it(`kill -9 of ${what}: ${how}`, () =>
      withLogsOnFailure(c, async () => {
        await openStreams(tag);
        await fault();
        await sleep(1_000);
        await restart();
        await freedAndWorking(tag, `${what}'s kill -9`);
      }));
  }

  it("kill -9 of nats-server, restarted after 3 s: both ends of each stream stop (the bus may have lost what was in flight), kubectl hears why, new streams work", () =>
    withLogsOnFailure(c, async () => {
      const { socket } = await openStreams("3333");
      let closed = false;
      socket.on("close", () => (closed = true));
      await c.nats.kill();
      await sleep(3_000);
      await c.nats.restart();
      await freedAndWorking("3333", "nats-server's kill -9");
      await waitFor(() => closed, { timeoutMs: 30_000, message: "the forwarded connection closed on kubectl's side too" });
    }));

  it("redis-server down for 3 s: the open streams go on (they never touch the store), and new ones work once it is back", () =>
    withLogsOnFailure(c, async () => {
      const { socket, pf, ex } = await openStreams("4444");
      let answer = "";
      socket.on("data", (b: Buffer) => (answer += b.toString()));
      await c.redis.kill();
      await sleep(3_000);
      await c.redis.restart();
      // The request's last line, through the same forwarded connection.
      socket.write("\r\n");
      await waitFor(() => answer.includes("web-8080"), { timeoutMs: 30_000, message: "the answer through the same forwarded connection" });
      assert.ok(await running("4444"), "the exec's command still runs");
      pf.kill("SIGKILL");
      ex.kill("SIGKILL");
      await freedAndWorking("4444", "redis-server's outage, then its kubectls gone");
    }));
});
