import http from "node:http";
import https from "node:https";
import net from "node:net";
import type { Container, Probe } from "@choreo/kit/gen/choreo/core/v1/core";
import type { ExecResult } from "../runtime/runtime.js";

/** One probe's outcome, with the kubelet's wording of a failure. */
export interface ProbeOutcome {
  ok: boolean;
  /** Why it failed (`HTTP probe failed with statuscode: 500`), empty on success. */
  message: string;
}

/** What running a probe needs from outside: the pod's IP and an exec into the container. */
export interface ProbeTarget {
  podIp: string;
  container: Container;
  exec(command: readonly string[], timeoutMs: number): Promise<ExecResult>;
}

/** A probe's timeout in ms (Kubernetes' default 1 s). */
export function probeTimeoutMs(p: Probe): number {
  return Math.max(1, p.timeoutSeconds || 1) * 1000;
}

/** Resolves a probe port given by number or by the name of one of the container's ports. */
export function resolvePort(
  container: Container,
  port: { value?: { $case: "intVal"; value: number } | { $case: "strVal"; value: string } } | undefined,
): number | undefined {
  const v = port?.value;
  if (!v) return undefined;
  if (v.$case === "intVal") return v.value;
  if (/^\d+$/.test(v.value)) return Number(v.value);
  return container.ports.find((p) => p.name === v.value)?.containerPort;
}

/** Runs a probe once (exec, httpGet or tcpSocket), never throwing. */
export async function runProbe(p: Probe, t: ProbeTarget): Promise<ProbeOutcome> {
  const timeoutMs = probeTimeoutMs(p);
  try {
    if (p.exec) {
      const r = await t.exec(p.exec.command, timeoutMs);
      return r.exitCode === 0 ? ok() : fail(`command ${JSON.stringify(p.exec.command)} exited with ${r.exitCode}: ${r.output.trim().slice(0, 200)}`);
    }
    if (p.httpGet) {
      const port = resolvePort(t.container, p.httpGet.port);
      if (!port) return fail(`invalid port ${JSON.stringify(p.httpGet.port?.value)}`);
      return await httpProbe(p.httpGet.scheme === "HTTPS", p.httpGet.host || t.podIp, port, p.httpGet.path || "/", p.httpGet.httpHeaders, timeoutMs);
    }
    if (p.tcpSocket) {
      const port = resolvePort(t.container, p.tcpSocket.port);
      if (!port) return fail(`invalid port ${JSON.stringify(p.tcpSocket.port?.value)}`);
      return await tcpProbe(p.tcpSocket.host || t.podIp, port, timeoutMs);
    }
    return fail("probe has no handler (exec, httpGet or tcpSocket)");
  } catch (err) {
    return fail((err as Error).message);
  }
}

const ok = (): ProbeOutcome => ({ ok: true, message: "" });
const fail = (message: string): ProbeOutcome => ({ ok: false, message });

/** 200–399 is success, as for the kubelet; redirects are not followed. */
function httpProbe(
  tls: boolean,
  host: string,
  port: number,
  path: string,
  headers: { name: string; value: string }[],
  timeoutMs: number,
): Promise<ProbeOutcome> {
  return new Promise((resolve) => {
    const mod = tls ? https : http;
    const req = mod.request(
      {
        host,
        port,
        path,
        method: "GET",
        timeout: timeoutMs,
        headers: { "User-Agent": "kube-probe/1.32", Accept: "*/*", ...Object.fromEntries(headers.map((h) => [h.name, h.value])) },
        rejectUnauthorized: false,
        agent: false,
      },
      (res) => {
        res.resume();
        const code = res.statusCode ?? 0;
        resolve(code >= 200 && code < 400 ? ok() : fail(`HTTP probe failed with statuscode: ${code}`));
      },
    );
    req.on("timeout", () => {
      req.destroy();
      resolve(fail(`Get "${tls ? "https" : "http"}://${host}:${port}${path}": context deadline exceeded (Client.Timeout exceeded while awaiting headers)`));
    });
    req.on("error", (err) => resolve(fail(`Get "${tls ? "https" : "http"}://${host}:${port}${path}": ${err.message}`)));
    req.end();
  });
}

function tcpProbe(host: string, port: number, timeoutMs: number): Promise<ProbeOutcome> {
  return new Promise((resolve) => {
    const s = net.connect({ host, port });
    const done = (o: ProbeOutcome): void => {
      s.destroy();
      resolve(o);
    };
    s.setTimeout(timeoutMs, () => done(fail(`dial tcp ${host}:${port}: i/o timeout`)));
    s.on("connect", () => done(ok()));
    s.on("error", (err) => done(fail(`dial tcp ${host}:${port}: ${err.message}`)));
  });
}
