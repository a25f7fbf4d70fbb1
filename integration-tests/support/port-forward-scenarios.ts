// pods/portforward scenarios with real kubectl on real pods, shared by the
// docker and process runtimes (integration-tests/port-forward-*.test.ts):
// kubectl 1.32 tunnels SPDY/3.1 in a WebSocket, kubectl 1.20 upgrades to
// SPDY/3.1; the api pairs kubectl's streams and the node agent connects.
import assert from "node:assert/strict";
import { spawn, type ChildProcess } from "node:child_process";
import { randomBytes } from "node:crypto";
import { existsSync } from "node:fs";
import { connect, type Socket } from "node:net";
import { PassThrough } from "node:stream";
import { after, before, describe, it } from "node:test";
import * as k8s from "@kubernetes/client-node";
import { waitFor } from "@choreo/kit/testing";
import { withLogsOnFailure } from "./cluster.js";
import { run } from "./kubectl.js";
import { dockerAvailable, startRealCluster, type RealCluster, type RealRuntime } from "./real-cluster.js";

const MANIFEST = `apiVersion: v1
kind: Pod
metadata:
  name: web
  labels: {app: web}
spec:
  terminationGracePeriodSeconds: 1
  containers:
  - name: a
    image: local/busybox:1.35
    command: ["sh", "-c", "mkdir -p /www-a && echo web-8080 > /www-a/index.html && exec httpd -f -p 8080 -h /www-a"]
  - name: b
    image: local/busybox:1.35
    command: ["sh", "-c", "mkdir -p /www-b && echo web-8081 > /www-b/index.html && exec httpd -f -p 8081 -h /www-b"]
  - name: echo
    image: local/busybox:1.35
    command: ["nc", "-ll", "-p", "9000", "-e", "cat"]
---
apiVersion: v1
kind: Service
metadata:
  name: web
spec:
  selector: {app: web}
  ports:
  - {name: http, port: 80, targetPort: 8080}
`;

export const KUBECTL_120 = "/var/lib/choreo/tools/kubectl-1.20/usr/bin/kubectl";

/** A running `kubectl port-forward`: its local ports (in the order asked) and its stderr so far. */
interface Forward {
  child: ChildProcess;
  ports: number[];
  stderr(): string;
  exited: Promise<number | null>;
  stop(): void;
}

/** Starts `kubectl port-forward <target> :p1 :p2 …` and waits for its "Forwarding from" lines. */
async function portForward(c: RealCluster, kubectl: string, target: string, remote: number[]): Promise<Forward> {
  const child = spawn(kubectl, ["port-forward", "--address", "127.0.0.1", target, ...remote.map((p) => `:${p}`)], {
    env: { ...process.env, KUBECONFIG: c.kubeconfig, HOME: c.dir },
    stdio: ["ignore", "pipe", "pipe"],
  });
  let out = "";
  let err = "";
  child.stdout?.on("data", (b: Buffer) => (out += b.toString()));
  child.stderr?.on("data", (b: Buffer) => (err += b.toString()));
  const exited = new Promise<number | null>((resolve) => child.once("exit", (code) => resolve(code)));
  // One "Forwarding from 127.0.0.1:<local> -> <remote>" line per port, in order (a Service's port is shown as its target port).
  const ports = (): number[] => {
    const found = [...out.matchAll(/Forwarding from 127\.0\.0\.1:(\d+) -> \d+/g)].map((m) => Number(m[1]));
    return remote.map((_, i) => found[i] ?? NaN);
  };
  await waitFor(() => ports().every((p) => p > 0) || child.exitCode !== null, { timeoutMs: 60_000, message: `kubectl port-forward ${target} listening` });
  assert.equal(child.exitCode, null, `kubectl port-forward exited: ${err}`);
  return { child, ports: ports(), stderr: () => err, exited, stop: () => child.kill("SIGKILL") };
}

/** One HTTP GET through a local port: the body, or the error's message. */
async function get(port: number): Promise<string> {
  try {
    const res = await fetch(`http://127.0.0.1:${port}/`, { signal: AbortSignal.timeout(30_000) });
    return await res.text();
  } catch (err) {
    return `error: ${(err as Error).message}`;
  }
}

/** `n` GETs, `concurrency` at a time. */
async function many(port: number, n: number, concurrency: number): Promise<string[]> {
  const out: string[] = [];
  let next = 0;
  await Promise.all(
    Array.from({ length: concurrency }, async () => {
      while (next < n) {
        next++;
        out.push(await get(port));
      }
    }),
  );
  return out;
}

/** Sends `data` to the echo server through a local port and reads as many bytes back. */
async function echo(port: number, data: Buffer): Promise<Buffer> {
  const socket = connect({ host: "127.0.0.1", port });
  const chunks: Buffer[] = [];
  let size = 0;
  return new Promise((resolve, reject) => {
    socket.on("error", reject);
    socket.on("data", (b: Buffer) => {
      chunks.push(b);
      size += b.length;
      if (size >= data.length) {
        socket.destroy();
        resolve(Buffer.concat(chunks));
      }
    });
    socket.on("close", () => resolve(Buffer.concat(chunks)));
    socket.write(data);
  });
}

/** An open TCP connection through a local port (held until destroyed). */
function hold(port: number): Promise<Socket> {
  return new Promise((resolve, reject) => {
    const s = connect({ host: "127.0.0.1", port }, () => resolve(s));
    s.on("error", reject);
  });
}

/** The port-forward scenarios on one node of `runtime`. */
export function portForwardScenarios(runtime: RealRuntime): void {
  const skip = runtime === "docker" && !dockerAvailable() ? "docker is not available" : false;
  describe(`kubectl port-forward to ${runtime} pods`, { skip }, () => {
    let c: RealCluster;
    const forwards: Forward[] = [];
    const kubectl = (args: string[]) => run("kubectl", args, c.kubeconfig);
    /** ESTABLISHED connections to `port` inside the pod (busybox netstat in container a). */
    const established = async (port: number): Promise<number> => {
      const r = await kubectl(["exec", "web", "-c", "a", "--", "netstat", "-tn"]);
      return r.stdout.split("\n").filter((l) => l.includes("ESTABLISHED") && new RegExp(`:${port}\\s`).test(l.split(/\s+/)[3] + " ")).length;
    };
    const forward = async (cmd: string, target: string, remote: number[]): Promise<Forward> => {
      const f = await portForward(c, cmd, target, remote);
      forwards.push(f);
      return f;
    };

    before(async () => {
      c = await startRealCluster(runtime, { nodes: 1 });
      const applied = await kubectl(["apply", "-f", c.manifest("web.yaml", MANIFEST)]);
      assert.equal(applied.code, 0, applied.stderr);
      await withLogsOnFailure(c, () =>
        waitFor(
          async () => (await c.pod("web")).status?.phase === "Running" && (await c.pod("web")).status?.containerStatuses?.every((s) => s.ready) === true,
          {
            timeoutMs: 120_000,
            message: "web running and ready",
          },
        ),
      );
    });
    after(async () => {
      for (const f of forwards) f.stop();
      if (c) {
        await c.stop();
        assert.deepEqual(c.leftovers(), [], "nothing of the cluster is left on the machine");
      }
    });

    it("kubectl 1.32 forwards two ports of a pod at once: 100 HTTP requests, 10 at a time, all answered by the right container", () =>
      withLogsOnFailure(c, async () => {
        const f = await forward("kubectl", "pod/web", [8080, 8081]);
        const [a, b] = f.ports as [number, number];
        const [ra, rb] = await Promise.all([many(a, 100, 10), many(b, 20, 5)]);
        assert.deepEqual(
          ra.filter((r) => r !== "web-8080\n"),
          [],
          `every answer through :${a} is container a's`,
        );
        assert.deepEqual(
          rb.filter((r) => r !== "web-8081\n"),
          [],
          `every answer through :${b} is container b's`,
        );
        assert.equal(f.child.exitCode, null, "kubectl still forwards");
      }));

    it("bytes cross unchanged both ways: 4 MB of random data echoed through the forwarded port", () =>
      withLogsOnFailure(c, async () => {
        const f = await forward("kubectl", "pod/web", [9000]);
        const data = randomBytes(4 * 1024 * 1024);
        const back = await echo(f.ports[0] ?? 0, data);
        assert.equal(back.length, data.length, "as many bytes came back");
        assert.ok(back.equals(data), "the same bytes came back");
      }));

    it("kubectl port-forward svc/web reaches the service's target port on a backing pod", () =>
      withLogsOnFailure(c, async () => {
        const f = await forward("kubectl", "svc/web", [80]);
        assert.equal(await get(f.ports[0] ?? 0), "web-8080\n");
      }));

    it("a port nothing listens on: the error reaches kubectl on the stream, and the port that works still works", () =>
      withLogsOnFailure(c, async () => {
        const f = await forward("kubectl", "pod/web", [8080, 81]);
        const [good, closed] = f.ports as [number, number];
        assert.equal(await get(good), "web-8080\n");
        assert.match(await get(closed), /^error/, "nothing answers through the closed port");
        await waitFor(() => /error forwarding port 81 to pod default\/web/.test(f.stderr()), {
          timeoutMs: 30_000,
          message: "kubectl prints the agent's error",
        });
        assert.match(f.stderr(), /ECONNREFUSED/);
        // kubectl 1.32 gives its whole session up after an error on a stream; the api and the node are fine.
        const again = await forward("kubectl", "pod/web", [8080]);
        assert.equal(await get(again.ports[0] ?? 0), "web-8080\n", "a new session works");
      }));

    it("closing kubectl frees everything on the node: its connection into the pod is gone", () =>
      withLogsOnFailure(c, async () => {
        const f = await forward("kubectl", "pod/web", [8080]);
        const before = await established(8080);
        const socket = await hold(f.ports[0] ?? 0);
        try {
          socket.write("GET / HTTP/1.1\r\nHost: x\r\n");
          await waitFor(async () => (await established(8080)) > before, { timeoutMs: 30_000, message: "the forwarded connection is open in the pod" });
          f.stop();
          await waitFor(async () => (await established(8080)) === before, { timeoutMs: 30_000, message: "the pod's side of the connection is closed" });
        } finally {
          socket.destroy();
        }
      }));

    it("kubectl 1.20 forwards over SPDY/3.1: 20 requests answered", () =>
      withLogsOnFailure(c, async () => {
        const f = await forward(KUBECTL_120, "pod/web", [8080]);
        const r = await many(f.ports[0] ?? 0, 20, 4);
        assert.deepEqual(
          r.filter((x) => x !== "web-8080\n"),
          [],
          f.stderr(),
        );
      }));

    it("@kubernetes/client-node's PortForward (WebSocket channels, v4.channel.k8s.io) reaches the pod; a closed port's error reaches its error stream", () =>
      withLogsOnFailure(c, async () => {
        const kc = new k8s.KubeConfig();
        kc.loadFromFile(c.kubeconfig);
        const pf = new k8s.PortForward(kc);
        const exchange = async (port: number, request: string): Promise<{ out: string; err: string }> => {
          const output = new PassThrough();
          const errors = new PassThrough();
          let out = "";
          let err = "";
          output.on("data", (b: Buffer) => (out += b.toString()));
          errors.on("data", (b: Buffer) => (err += b.toString()));
          const input = new PassThrough();
          const ws = (await pf.portForward("default", "web", [port], output, errors, input)) as { close(): void; readyState: number };
          input.write(request);
          try {
            await waitFor(() => out.includes("web-8080") || err.length > 0 || ws.readyState === 3, { timeoutMs: 30_000, message: "an answer or an error" });
          } finally {
            ws.close();
          }
          return { out, err };
        };
        const ok = await exchange(8080, "GET / HTTP/1.0\r\n\r\n");
        assert.match(ok.out, /^HTTP\/1\.[01] 200/);
        assert.match(ok.out, /web-8080/);
        const refused = await exchange(81, "GET / HTTP/1.0\r\n\r\n");
        assert.match(refused.err, /error forwarding port 81 to pod default\/web.*ECONNREFUSED/);
      }));

    it(
      "the official Python client's portforward (WebSocket channels) reaches the pod",
      { skip: existsSync("/usr/bin/python3") ? false : "python3 is not installed" },
      () =>
        withLogsOnFailure(c, async () => {
          const script = `
import sys
from kubernetes import client, config
from kubernetes.stream import portforward
config.load_kube_config(config_file=sys.argv[1])
api = client.CoreV1Api()
pf = portforward(api.connect_get_namespaced_pod_portforward, "web", "default", ports="8080")
sock = pf.socket(8080)
sock.setblocking(True)
sock.sendall(b"GET / HTTP/1.0\\r\\n\\r\\n")
data = b""
while True:
    chunk = sock.recv(4096)
    if not chunk:
        break
    data += chunk
sock.close()
print(data.decode())
err = pf.error(8080)
if err:
    print("ERROR", err)
`;
          const r = await run("/usr/bin/python3", ["-c", script, c.kubeconfig], c.kubeconfig);
          assert.equal(r.code, 0, r.stderr);
          assert.match(r.stdout, /HTTP\/1\.[01] 200/);
          assert.match(r.stdout, /web-8080/);
          assert.doesNotMatch(r.stdout, /ERROR/);
        }),
    );

    it("bad input: a missing pod is a clear error and no session", () =>
      withLogsOnFailure(c, async () => {
        const r = await kubectl(["port-forward", "pod/nopod", ":80"]);
        assert.notEqual(r.code, 0);
        assert.match(r.stderr, /pods "nopod" not found/);
      }));
  });
}
