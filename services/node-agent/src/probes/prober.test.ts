import assert from "node:assert/strict";
import http from "node:http";
import type { AddressInfo } from "node:net";
import { after, before, describe, it } from "node:test";
import type { Container, ContainerStatus, Pod, Probe } from "@choreo/kit/gen/choreo/core/v1/core";
import { silentLogger } from "@choreo/kit/log";
import { waitFor } from "@choreo/kit/testing";
import type { PodRuntimeStatus } from "../runtime/runtime.js";
import { Prober, type ProbeKind } from "./prober.js";
import { resolvePort, runProbe } from "./run-probe.js";

// A real HTTP server stands in for the container: its answers are switched by the test.
let healthy = true;
let server: http.Server;
let port = 0;

const probe = (p: Partial<Probe>): Probe => ({
  exec: undefined,
  httpGet: undefined,
  tcpSocket: undefined,
  initialDelaySeconds: 0,
  timeoutSeconds: 1,
  periodSeconds: 1,
  successThreshold: 1,
  failureThreshold: 1,
  terminationGracePeriodSeconds: undefined,
  ...p,
});
const httpGet = (path: string): Probe["httpGet"] => ({ path, port: { value: { $case: "intVal", value: port } }, host: "", scheme: "HTTP", httpHeaders: [] });

function container(probes: Partial<Pick<Container, "livenessProbe" | "readinessProbe" | "startupProbe">>): Container {
  return {
    name: "app",
    image: "x",
    command: [],
    args: [],
    workingDir: "",
    ports: [{ name: "http", hostPort: 0, containerPort: port, protocol: "TCP", hostIp: "" }],
    env: [],
    resources: undefined,
    volumeMounts: [],
    livenessProbe: undefined,
    readinessProbe: undefined,
    startupProbe: undefined,
    terminationMessagePath: "",
    terminationMessagePolicy: "",
    imagePullPolicy: "",
    stdin: false,
    tty: false,
    envFrom: [],
    resizePolicy: [],
    volumeDevices: [],
    stdinOnce: false,
    ...probes,
  };
}

function podWith(c: Container): Pod {
  return {
    apiVersion: "v1",
    kind: "Pod",
    metadata: { name: "p", namespace: "default", uid: "u1" },
    spec: { containers: [c], terminationGracePeriodSeconds: 7 },
  } as unknown as Pod; // the prober reads only these fields
}

function running(containerId = "c-1"): PodRuntimeStatus {
  const cs: ContainerStatus = {
    name: "app",
    state: { running: { startedAt: new Date().toISOString() } },
    lastState: undefined,
    ready: true,
    restartCount: 0,
    image: "x",
    imageId: "",
    allocatedResources: {},
    volumeMounts: [],
    allocatedResourcesStatus: [],
    containerId,
    started: true,
  };
  return { uid: "u1", podIp: "127.0.0.1", startedAt: "", containerStatuses: [cs] };
}

function recorder() {
  const r = { changed: 0, unhealthy: [] as string[], kills: [] as { kind: ProbeKind; grace: number }[] };
  return {
    r,
    hooks: {
      changed: () => void r.changed++,
      unhealthy: (_u: string, _c: string, _k: ProbeKind, m: string) => void r.unhealthy.push(m),
      kill: (_u: string, _c: string, kind: ProbeKind, grace: number) => void r.kills.push({ kind, grace }),
    },
  };
}

const noExec = { exec: async () => ({ exitCode: 0, output: "" }) };

describe("probes", () => {
  before(async () => {
    server = http.createServer((req, res) => {
      res.statusCode = req.url === "/healthz" && !healthy ? 500 : 200;
      res.end("ok");
    });
    await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
    port = (server.address() as AddressInfo).port;
  });
  after(() => server.close());

  it("runs httpGet, tcpSocket and exec probes with the kubelet's wording of failures", async () => {
    const target = {
      podIp: "127.0.0.1",
      container: container({}),
      exec: async (cmd: readonly string[]) => ({ exitCode: cmd[0] === "ok" ? 0 : 2, output: "nope" }),
    };
    assert.deepEqual(await runProbe(probe({ httpGet: httpGet("/") }), target), { ok: true, message: "" });
    healthy = false;
    assert.equal((await runProbe(probe({ httpGet: httpGet("/healthz") }), target)).message, "HTTP probe failed with statuscode: 500");
    healthy = true;
    assert.ok((await runProbe(probe({ tcpSocket: { port: { value: { $case: "strVal", value: "http" } }, host: "" } }), target)).ok, "named port");
    assert.match(
      (await runProbe(probe({ tcpSocket: { port: { value: { $case: "intVal", value: 1 } }, host: "" } }), target)).message,
      /dial tcp 127\.0\.0\.1:1/,
    );
    assert.ok((await runProbe(probe({ exec: { command: ["ok"] } }), target)).ok);
    assert.match((await runProbe(probe({ exec: { command: ["bad"] } }), target)).message, /exited with 2: nope/);
    assert.equal(resolvePort(container({}), { value: { $case: "strVal", value: "missing" } }), undefined);
  });

  it("readiness starts false, turns true on success and false after failureThreshold failures", async () => {
    healthy = true;
    const { r, hooks } = recorder();
    const prober = new Prober(noExec, hooks, silentLogger());
    const c = container({ readinessProbe: probe({ httpGet: httpGet("/healthz"), failureThreshold: 2 }) });
    const pod = podWith(c);
    prober.sync(pod, running());
    assert.equal(prober.apply(running()).containerStatuses[0]?.ready, false, "not ready before the first success");
    await waitFor(() => prober.apply(running()).containerStatuses[0]?.ready === true, { timeoutMs: 10_000, message: "ready" });
    healthy = false;
    await waitFor(() => prober.apply(running()).containerStatuses[0]?.ready === false, { timeoutMs: 10_000, message: "unready" });
    assert.ok(r.unhealthy.length >= 2 && r.unhealthy.every((m) => m.startsWith("Readiness probe failed: HTTP probe failed with statuscode: 500")));
    assert.ok(r.changed >= 2);
    assert.equal(r.kills.length, 0, "readiness never kills");
    prober.close();
    healthy = true;
  });

  it("liveness kills after failureThreshold failures, with the probe's or the pod's grace period; a restarted container gets fresh workers", async () => {
    const { r, hooks } = recorder();
    const prober = new Prober(noExec, hooks, silentLogger());
    const pod = podWith(container({ livenessProbe: probe({ httpGet: httpGet("/healthz"), failureThreshold: 2 }) }));
    prober.sync(pod, running("c-1"));
    healthy = false;
    await waitFor(() => r.kills.length === 1, { timeoutMs: 10_000, message: "killed" });
    assert.deepEqual(r.kills[0], { kind: "Liveness", grace: 7 });
    healthy = true;
    prober.sync(pod, running("c-2")); // the restart
    await new Promise((res) => setTimeout(res, 2_500));
    assert.equal(r.kills.length, 1, "the new run is healthy");
    prober.close();
  });

  it("a startup probe holds liveness and readiness until it succeeds", async () => {
    const { r, hooks } = recorder();
    let started = false;
    const exec = { exec: async () => ({ exitCode: started ? 0 : 1, output: "" }) };
    const prober = new Prober(exec, hooks, silentLogger());
    healthy = false; // liveness would fail at once, were it running
    const pod = podWith(
      container({
        startupProbe: probe({ exec: { command: ["check"] }, failureThreshold: 30 }),
        livenessProbe: probe({ httpGet: httpGet("/healthz"), failureThreshold: 1 }),
      }),
    );
    prober.sync(pod, running());
    await new Promise((res) => setTimeout(res, 2_500));
    assert.equal(prober.apply(running()).containerStatuses[0]?.started, false);
    assert.equal(r.kills.length, 0, "liveness waits for the startup probe");
    started = true;
    await waitFor(() => prober.apply(running()).containerStatuses[0]?.started === true, { timeoutMs: 10_000, message: "started" });
    await waitFor(() => r.kills.length === 1, { timeoutMs: 10_000, message: "liveness runs after startup, and fails" });
    prober.close();
    healthy = true;
  });
});
