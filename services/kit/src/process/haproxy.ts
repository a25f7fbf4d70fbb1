// HAProxy in front of api replicas, for tests, benchmarks and `choreo up
// --ha`: one address per listener (https, http, grpc), TCP passthrough (the
// TLS session, and so a client's certificate, goes to the api itself), each
// replica health-checked on /readyz every `checkIntervalMs` — over its plain
// HTTP port when it has one, else over TLS on the served port (`check-ssl
// verify none`). A connection that cannot reach a replica is sent to another
// (`option redispatch`, `retries`); a replica marked down has its sessions
// cut at once, so a client waiting on a dead replica's connection learns it
// in one check period, not at its own timeout.
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import net from "node:net";
import os from "node:os";
import path from "node:path";
import { freePort, startProcess, waitFor, type ManagedProcess } from "./process.js";

/** One api replica behind a listener. */
export interface HaproxyServer {
  name: string;
  /** Default 127.0.0.1 (a hostname needs to resolve when HAProxy starts). */
  host?: string;
  port: number;
  /** The replica's plain HTTP port: /readyz is asked there. Without it /readyz is asked over TLS on `port`. */
  healthPort?: number;
}

/** One address in front of the replicas (a HAProxy frontend and its backend). */
export interface HaproxyListener {
  /** `https`, `http`, `grpc`, …: the key of `ports`, and the frontend's name. */
  name: string;
  /** Default: a free port. */
  port?: number;
  servers: HaproxyServer[];
}

export interface HaproxyOptions {
  listeners: HaproxyListener[];
  /** Where HAProxy listens (default 127.0.0.1). */
  host?: string;
  /** Health check period (default 500 ms); a replica is down after 2 failed checks and up after 2 passed. */
  checkIntervalMs?: number;
  /** How long a check waits for /readyz's answer (default 1000 ms): what a hung replica costs, twice. */
  checkTimeoutMs?: number;
  dir?: string;
  logFile?: string;
}

/** A server's state as HAProxy's runtime API reports it. */
export type HaproxyServerState = "UP" | "DOWN" | "MAINT" | "NOLB" | "DRAIN" | "no check";

/** A server as HAProxy's runtime API reports it. */
export interface HaproxyServerStat {
  status: HaproxyServerState;
  /** Connections it was given since HAProxy started. */
  sessions: number;
}

export interface HaproxyHandle {
  /** Each listener's port by name. */
  readonly ports: Readonly<Record<string, number>>;
  readonly host: string;
  /** `haproxy.cfg`, its admin socket and its log. */
  readonly dir: string;
  readonly configFile: string;
  process(): ManagedProcess;
  /** Each server's state and sessions so far by `listener/server` (from `show stat` on the admin socket). */
  stats(): Promise<Record<string, HaproxyServerStat>>;
  /** Each server's state by `listener/server`. */
  states(): Promise<Record<string, HaproxyServerState>>;
  /** Waits until HAProxy names `server` of `listener` as `state` (UP after a restart, DOWN after a kill). */
  waitFor(listener: string, server: string, state: "UP" | "DOWN", timeoutMs?: number): Promise<void>;
  kill(): Promise<void>;
  restart(): Promise<void>;
  stop(): Promise<void>;
}

/** The haproxy.cfg for `listeners` on `host`, its admin socket at `socket`. */
export function haproxyConfig(
  listeners: (HaproxyListener & { port: number })[],
  opts: { host: string; socket: string; checkIntervalMs: number; checkTimeoutMs: number },
): string {
  const lines = [
    "global",
    `  stats socket ${opts.socket} mode 600 level admin`,
    "  maxconn 8000", // two file descriptors a connection: within a 20000 descriptor limit
    "",
    "defaults",
    "  mode tcp",
    "  timeout connect 2s",
    // Watches, logs -f and exec sessions stay open: long idle timeouts, as a Kubernetes api load balancer.
    "  timeout client 1h",
    "  timeout server 1h",
    "  timeout tunnel 1h",
    // A hung replica (SIGSTOP, a blocked event loop) accepts the check's connection and never answers: down after 2 × (interval + this).
    `  timeout check ${opts.checkTimeoutMs}ms`,
    // A connection refused by a dead replica is retried on another before the client sees anything.
    "  option redispatch",
    "  retries 3",
    "",
  ];
  for (const l of listeners) {
    lines.push(`frontend ${l.name}`, `  bind ${opts.host}:${l.port}`, `  default_backend ${l.name}-replicas`, "");
    lines.push(
      `backend ${l.name}-replicas`,
      // Long-lived watches: the least busy replica takes the next connection.
      "  balance leastconn",
      "  option httpchk",
      "  http-check send meth GET uri /readyz",
      "  http-check expect status 200",
      `  default-server inter ${opts.checkIntervalMs} fastinter ${opts.checkIntervalMs} downinter ${opts.checkIntervalMs} fall 2 rise 2 on-marked-down shutdown-sessions`,
    );
    for (const s of l.servers) {
      const check = s.healthPort !== undefined ? `check port ${s.healthPort}` : "check check-ssl verify none";
      lines.push(`  server ${s.name} ${s.host ?? "127.0.0.1"}:${s.port} ${check}`);
    }
    lines.push("");
  }
  return lines.join("\n");
}

/** Starts haproxy (Debian's, in the foreground) with a listener per entry of `listeners`; resolves once every listener accepts connections. */
export async function startHaproxy(opts: HaproxyOptions): Promise<HaproxyHandle> {
  const owned = !opts.dir;
  const dir = opts.dir ?? mkdtempSync(path.join(os.tmpdir(), "choreo-haproxy-"));
  mkdirSync(dir, { recursive: true, mode: 0o700 });
  const host = opts.host ?? "127.0.0.1";
  const socket = path.join(dir, "admin.sock");
  const listeners: (HaproxyListener & { port: number })[] = [];
  for (const l of opts.listeners) listeners.push({ ...l, port: l.port ?? (await freePort()) });
  const configFile = path.join(dir, "haproxy.cfg");
  writeFileSync(
    configFile,
    haproxyConfig(listeners, { host, socket, checkIntervalMs: opts.checkIntervalMs ?? 500, checkTimeoutMs: opts.checkTimeoutMs ?? 1_000 }),
    { mode: 0o600 },
  );
  const launch = (): Promise<ManagedProcess> =>
    startProcess({
      name: "haproxy",
      cmd: "haproxy",
      // -db: foreground, no daemon (a supervisor watches this process); -f: the config.
      args: ["-db", "-f", configFile],
      readyCheck: async () => (await Promise.all(listeners.map((l) => accepts(host, l.port)))).every(Boolean),
      timeoutMs: 20_000,
      logFile: opts.logFile ?? path.join(dir, "haproxy.log"),
    });
  let proc: ManagedProcess;
  try {
    proc = await launch();
  } catch (err) {
    // A config HAProxy refuses (or a port taken meanwhile): nothing of this start stays behind.
    if (owned) rmSync(dir, { recursive: true, force: true });
    throw err;
  }
  const stats = async (): Promise<Record<string, HaproxyServerStat>> => {
    const csv = await adminCommand(socket, "show stat");
    const out: Record<string, HaproxyServerStat> = {};
    const [header, ...rows] = csv.replace(/^# /, "").trim().split("\n");
    const cols = (header ?? "").split(",");
    const [px, sv, st, stot] = ["pxname", "svname", "status", "stot"].map((c) => cols.indexOf(c));
    for (const row of rows) {
      const f = row.split(",");
      const server = f[sv!] ?? "";
      if (server === "FRONTEND" || server === "BACKEND") continue;
      out[`${(f[px!] ?? "").replace(/-replicas$/, "")}/${server}`] = {
        status: (f[st!] ?? "").replace(/ \d+\/\d+$/, "") as HaproxyServerState,
        sessions: Number(f[stot!] ?? 0),
      };
    }
    return out;
  };
  const states = async (): Promise<Record<string, HaproxyServerState>> => Object.fromEntries(Object.entries(await stats()).map(([k, v]) => [k, v.status]));
  return {
    ports: Object.fromEntries(listeners.map((l) => [l.name, l.port])),
    host,
    dir,
    configFile,
    process: () => proc,
    stats,
    states,
    async waitFor(listener, server, state, timeoutMs = 20_000) {
      await waitFor(async () => (await states())[`${listener}/${server}`] === state, {
        timeoutMs,
        intervalMs: 50,
        message: `HAProxy to mark ${listener}/${server} ${state}`,
      });
    },
    kill: () => proc.kill(),
    async restart() {
      await proc.kill();
      proc = await launch();
    },
    async stop() {
      await proc.stop(5_000);
      if (owned) rmSync(dir, { recursive: true, force: true });
    },
  };
}

function accepts(host: string, port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const s = net.connect({ host, port });
    const done = (ok: boolean): void => {
      s.destroy();
      resolve(ok);
    };
    s.once("connect", () => done(true));
    s.once("error", () => done(false));
    s.setTimeout(1_000, () => done(false));
  });
}

/** One command on HAProxy's admin socket; its whole answer. */
export function adminCommand(socket: string, command: string): Promise<string> {
  return new Promise((resolve, reject) => {
    let out = "";
    const s = net.connect(socket);
    s.setTimeout(2_000, () => s.destroy(new Error(`haproxy admin socket: no answer to "${command}"`)));
    s.on("connect", () => s.write(`${command}\n`));
    s.on("data", (b) => (out += b.toString()));
    s.on("error", reject);
    s.on("close", () => resolve(out));
  });
}
