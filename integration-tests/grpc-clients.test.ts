// test-tier: servers
// gRPC's front step, against a real api process (TLS on its gRPC port, as
// `choreo up` runs it): (a) the Python example (examples/grpc-python), its
// client generated from proto/ by Debian's python3-grpc-tools and run on
// python3-grpcio, lists pods and sees a watch event; (b) a grpc-js client
// built from server reflection alone lists pods, and grpc.health.v1 answers
// SERVING.
import assert from "node:assert/strict";
import { execFile, spawn, type ChildProcess } from "node:child_process";
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { createInterface } from "node:readline";
import { after, before, describe, it } from "node:test";
import * as grpc from "@grpc/grpc-js";
import { reflect } from "@choreo/api/grpc";
import { fromKubeJson } from "@choreo/kit/kube-json";
import { signClientCert } from "@choreo/kit/secrets";
import { waitFor } from "@choreo/kit/testing";
import { startCluster, type TestCluster } from "./support/cluster.js";

const PYTHON = "/usr/bin/python3";
const SCRIPT = path.join(import.meta.dirname, "..", "examples", "grpc-python", "list_and_watch.py");
// What `scripts/ensure-deps.sh --test` installs: python3-grpcio, python3-grpc-tools, protobuf-compiler, protobuf-compiler-grpc.
const hasGrpcPython = [
  PYTHON,
  "/usr/lib/python3/dist-packages/grpc_tools",
  "/usr/lib/python3/dist-packages/grpc",
  "/usr/bin/protoc",
  "/usr/bin/grpc_python_plugin",
].every((f) => existsSync(f));

const pod = (name: string) =>
  fromKubeJson({ apiVersion: "v1", kind: "Pod", metadata: { name, namespace: "default" }, spec: { containers: [{ name: "c", image: "busybox" }] } });

describe("gRPC clients against a real api (TLS)", () => {
  let c: TestCluster;
  let caFile: string;
  let genDir: string;
  before(async () => {
    c = await startCluster();
    caFile = path.join(c.dir, "api", "pki", "apiserver.crt");
    genDir = mkdtempSync(path.join(os.tmpdir(), "choreo-grpc-py-"));
    await c.client.create(pod("py-1"));
  });
  after(async () => {
    await c?.stop();
    if (genDir) rmSync(genDir, { recursive: true, force: true });
  });

  it("the Python example lists pods and sees a watch event", { skip: !hasGrpcPython && "python3-grpcio / python3-grpc-tools not installed" }, async () => {
    const args = [SCRIPT, "--server", `127.0.0.1:${c.apis[0]!.grpcPort}`, "--ca", caFile, "--namespace", "default", "--events", "1", "--watch-seconds", "60"];
    const py: ChildProcess = spawn(PYTHON, [...args, "--gen-dir", genDir], {
      env: { ...process.env, CHOREO_TOKEN: c.token },
      stdio: ["ignore", "pipe", "pipe"],
    });
    const lines: string[] = [];
    let stderr = "";
    createInterface({ input: py.stdout! }).on("line", (l) => lines.push(l));
    py.stderr!.on("data", (d: Buffer) => (stderr += d.toString()));
    const exited = new Promise<number | null>((resolve) => py.on("exit", (code) => resolve(code)));
    try {
      // The first run generates the client from proto/ (a few seconds).
      await waitFor(() => lines.some((l) => l.startsWith("listed ")) || py.exitCode !== null, { timeoutMs: 60_000, message: "the Python client listed" });
      assert.ok(lines.includes("pod default/py-1 Pending"), `${lines.join("\n")}\n${stderr}`);
      assert.match(
        lines.find((l) => l.startsWith("listed "))!,
        /^listed \d+ pods at revision \d+$/,
      );
      await c.client.create(pod("py-2"));
      assert.equal(await exited, 0, stderr);
      assert.ok(
        lines.some((l) => /^ADDED default\/py-2 revision=\d+$/.test(l)),
        lines.join("\n"),
      );
      assert.equal(lines.at(-1), "watched 1 changes");
      assert.ok(existsSync(path.join(genDir, "choreo", "api", "v1", "api_pb2_grpc.py")), "generated from proto/");
    } finally {
      py.kill();
    }
  });

  it(
    "the Python example with a client certificate instead of a token; its watch ends at its deadline",
    { skip: !hasGrpcPython && "python3-grpcio / python3-grpc-tools not installed" },
    async () => {
      const pki = path.join(c.dir, "api", "pki");
      const cert = await signClientCert(pki, "py-admin", ["system:masters"]);
      writeFileSync(path.join(genDir, "client.crt"), cert.cert);
      writeFileSync(path.join(genDir, "client.key"), cert.key, { mode: 0o600 });
      const args = [
        SCRIPT,
        "--server",
        `127.0.0.1:${c.apis[0]!.grpcPort}`,
        "--ca",
        caFile,
        "--cert",
        path.join(genDir, "client.crt"),
        "--key",
        path.join(genDir, "client.key"),
      ];
      const started = Date.now();
      const { code, stdout, stderr } = await new Promise<{ code: number | null; stdout: string; stderr: string }>((resolve) => {
        const env = { ...process.env };
        delete env["CHOREO_TOKEN"];
        execFile(PYTHON, [...args, "--watch-seconds", "1.5", "--gen-dir", genDir], { env, timeout: 60_000 }, (err, stdout, stderr) =>
          resolve({ code: err ? ((err as { code?: number }).code ?? 1) : 0, stdout, stderr }),
        );
      });
      assert.equal(code, 0, stderr);
      assert.match(stdout, /^pod default\/py-1 /m);
      assert.match(stdout, /^watched \d+ changes$/m, "ended by its deadline");
      assert.ok(Date.now() - started < 30_000);
    },
  );

  const tlsAndToken = () =>
    grpc.credentials.combineChannelCredentials(
      grpc.credentials.createSsl(readFileSync(caFile)),
      grpc.credentials.createFromMetadataGenerator((_p, cb) => {
        const md = new grpc.Metadata();
        md.set("authorization", `Bearer ${c.token}`);
        cb(null, md);
      }),
    );

  it("a client from reflection alone lists pods; grpc.health.v1 is SERVING", async () => {
    const creds = tlsAndToken();
    const address = `127.0.0.1:${c.apis[0]!.grpcPort}`;
    const r = await reflect(address, creds, ["choreo.api.v1.Api", "grpc.health.v1.Health"], { loader: { enums: String, longs: Number, oneofs: true } });
    type Unary = (req: object, cb: (err: grpc.ServiceError | null, res: unknown) => void) => void;
    type Client = grpc.Client & Record<string, Unary>;
    const pkg = r.grpc as unknown as {
      choreo: { api: { v1: { Api: new (a: string, c: grpc.ChannelCredentials) => Client } } };
      grpc: { health: { v1: { Health: new (a: string, c: grpc.ChannelCredentials) => Client } } };
    };
    const api = new pkg.choreo.api.v1.Api(address, creds);
    const health = new pkg.grpc.health.v1.Health(address, creds);
    const ask = <T>(client: Client, method: string, req: object) =>
      new Promise<T>((resolve, reject) => client[method]!.call(client, req, (err, res) => (err ? reject(err) : resolve(res as T))));
    try {
      const listed = await ask<{ items: { pod?: { metadata: { name: string } } }[] }>(api, "list", { resource: "pods", namespace: "default" });
      assert.ok(listed.items.some((o) => o.pod?.metadata.name === "py-1"));
      await waitFor(async () => (await ask<{ status: string }>(health, "check", { service: "" })).status === "SERVING", { timeoutMs: 10_000 });
      assert.equal((await ask<{ status: string }>(health, "check", { service: "choreo.api.v1.Api" })).status, "SERVING");
    } finally {
      api.close();
      health.close();
    }
  });

  it("health follows readiness through kill -9 of redis-server, of nats-server and of the api itself", async (t) => {
    const creds = tlsAndToken();
    const address = `127.0.0.1:${c.apis[0]!.grpcPort}`;
    const r = await reflect(address, creds, ["grpc.health.v1.Health"], { loader: { enums: String } });
    type Health = grpc.Client & {
      check(req: object, cb: (err: grpc.ServiceError | null, res?: { status: string }) => void): void;
      watch(req: object): grpc.ClientReadableStream<{ status: string }>;
    };
    const HealthClient = (r.grpc as unknown as { grpc: { health: { v1: { Health: new (a: string, c: grpc.ChannelCredentials) => Health } } } }).grpc.health.v1
      .Health;
    const health = new HealthClient(address, creds);
    const statuses: string[] = [];
    let ended: grpc.ServiceError | undefined;
    const follow = (): grpc.ClientReadableStream<{ status: string }> => {
      const w = health.watch({ service: "choreo.api.v1.Api" });
      w.on("data", (m: { status: string }) => statuses.push(m.status));
      w.on("error", (e: grpc.ServiceError) => (ended = e));
      return w;
    };
    const readyz = async (): Promise<string> => {
      const res = await fetch(`${c.httpUrl}/readyz?verbose`, { signal: AbortSignal.timeout(3_000) });
      return `${res.status} ${await res.text()}`;
    };
    const WAIT = { timeoutMs: 30_000, intervalMs: 100 };
    let watch = follow();
    try {
      await waitFor(() => statuses.at(-1) === "SERVING", { ...WAIT, message: "SERVING at first" });
      for (const [what, server, check] of [
        ["redis-server", c.redis, "redis"],
        ["nats-server", c.nats, "nats"],
      ] as const) {
        const killed = Date.now();
        await server.kill();
        await waitFor(() => statuses.at(-1) === "NOT_SERVING", { ...WAIT, message: `NOT_SERVING once ${what} is killed -9` });
        t.diagnostic(`${what} killed -9 → NOT_SERVING after ${Date.now() - killed} ms`);
        assert.match(await readyz(), new RegExp(`^500 [\\s\\S]*\\[-\\]${check} failed`), "/readyz names the same check");
        const restarted = Date.now();
        await server.restart();
        await waitFor(() => statuses.at(-1) === "SERVING", { ...WAIT, message: `SERVING again once ${what} is back` });
        t.diagnostic(`${what} restarted → SERVING after ${Date.now() - restarted} ms`);
        assert.match(await readyz(), /^200 [\s\S]*readyz check passed/);
      }
      assert.equal(ended, undefined, "the Watch stream lived through both");
      // The api itself killed -9: the stream ends UNAVAILABLE; the api started again serves SERVING to a new Watch.
      await c.killApi(0);
      await waitFor(() => ended !== undefined, { ...WAIT, message: "the Watch ends with the api" });
      assert.equal(ended!.code, grpc.status.UNAVAILABLE);
      await c.startApi(0);
      statuses.length = 0;
      ended = undefined;
      watch = follow();
      await waitFor(() => statuses.at(-1) === "SERVING", { ...WAIT, message: "SERVING from the restarted api" });
    } finally {
      watch.cancel();
      health.close();
    }
  });
});
