import { spawn, type ChildProcess } from "node:child_process";
import { createWriteStream, readFileSync, type WriteStream } from "node:fs";
import net from "node:net";

/** Options of `startProcess`. */
export interface ProcessOptions {
  name: string;
  cmd: string;
  args?: string[];
  env?: Record<string, string | undefined>;
  cwd?: string;
  /** Ready once this appears in stdout or stderr. */
  readyWhen?: RegExp;
  /** Ready once this URL answers 200. */
  readyUrl?: string;
  /** Ready once this resolves true (polled). */
  readyCheck?: () => Promise<boolean>;
  timeoutMs?: number;
  /** Also append the output to this file. */
  logFile?: string;
}

/** A child process started by `startProcess`. */
export interface ManagedProcess {
  readonly name: string;
  readonly pid: number;
  readonly child: ChildProcess;
  /** Resolves when the process exits. */
  readonly exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
  /** The output so far (stdout and stderr interleaved, last 256 KiB). */
  output(): string;
  /** kill -9, and wait for the exit. */
  kill(): Promise<void>;
  /** SIGTERM, then SIGKILL after `graceMs`; waits for the exit. */
  stop(graceMs?: number): Promise<void>;
  isRunning(): boolean;
}

const MAX_OUTPUT = 256 * 1024;

/**
 * Node flags every long-running choreo process runs with (the api, the actors, the node agents; choreo up, choreo join,
 * the test clusters and the compose files). `--heap-growing-percent=100`: after a full GC, V8 lets the old generation
 * grow to twice what survived before the next one — Go's default GOGC=100 — where V8 otherwise picks up to 4× for a
 * process that allocates fast on a machine with memory to spare. At 30,000 pods on 1,000 hollow nodes that was ~300 MB
 * less RSS in all (the node agent 700 → 520 MB, the scheduler 420 → 330 MB) with the same CPU per pod; 20 % cost the
 * api 40 % more CPU (bench/RESULTS.md, "The old generation's growth").
 */
export const NODE_FLAGS: readonly string[] = ["--heap-growing-percent=100"];

/**
 * Node flags every api process runs with (choreo up, the test clusters, the compose files spell them out too): a
 * young generation large enough for the api's short-lived garbage per write (decoded requests, encoded answers).
 * V8's default (16 MB semi-spaces) put ~20 % of the api's busy time in scavenges at 1,000 nodes; 64 MB halved that
 * and cut the api's CPU per pod 2.24 → 1.91 ms at 30,000 pods with a lower RSS (bench/RESULTS.md, "api CPU per
 * write, round 4"). The space grows only as the api allocates: an idle api keeps V8's small one.
 */
export const API_NODE_FLAGS: readonly string[] = ["--max-semi-space-size=64", ...NODE_FLAGS];

/** Starts a process and waits until it is ready; rejects with its output if it exits first or times out. */
export async function startProcess(opts: ProcessOptions): Promise<ManagedProcess> {
  const child = spawn(opts.cmd, opts.args ?? [], {
    cwd: opts.cwd,
    env: { ...process.env, ...opts.env },
    stdio: ["ignore", "pipe", "pipe"],
  });
  let out = "";
  let running = true;
  const log: WriteStream | undefined = opts.logFile ? createWriteStream(opts.logFile, { flags: "a" }) : undefined;
  const listeners = new Set<() => void>();
  const onData = (b: Buffer): void => {
    const s = b.toString();
    out = (out + s).slice(-MAX_OUTPUT);
    // Output can still arrive after "exit" (the pipes drain later): the log file is ended by then, and a write would throw.
    if (log && !log.writableEnded) log.write(s);
    for (const l of listeners) l();
  };
  child.stdout?.on("data", onData);
  child.stderr?.on("data", onData);
  const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) => {
    child.on("exit", (code, signal) => {
      running = false;
      log?.end();
      for (const l of listeners) l();
      resolve({ code, signal });
    });
    child.on("error", (err) => {
      out += `\nspawn error: ${err.message}`;
      running = false;
      for (const l of listeners) l();
      resolve({ code: -1, signal: null });
    });
  });

  const proc: ManagedProcess = {
    name: opts.name,
    pid: child.pid ?? -1,
    child,
    exited,
    output: () => out,
    isRunning: () => running,
    async kill() {
      if (running) child.kill("SIGKILL");
      await exited;
    },
    async stop(graceMs = 10_000) {
      if (!running) return;
      child.kill("SIGTERM");
      // A stopped process (SIGSTOP, a debugger) would hold the signal until the grace ran out: as systemd does, continue it.
      child.kill("SIGCONT");
      const t = setTimeout(() => child.kill("SIGKILL"), graceMs);
      await exited;
      clearTimeout(t);
    },
  };

  const timeoutMs = opts.timeoutMs ?? 30_000;
  const deadline = Date.now() + timeoutMs;
  try {
    await new Promise<void>((resolve, reject) => {
      let done = false;
      const finish = (err?: Error): void => {
        if (done) return;
        done = true;
        listeners.delete(check);
        clearInterval(poll);
        if (err) reject(err);
        else resolve();
      };
      const check = (): void => {
        if (!running) finish(new Error(`${opts.name} exited before it was ready:\n${out.slice(-4000)}`));
        else if (opts.readyWhen?.test(out)) finish();
        else if (Date.now() > deadline) finish(new Error(`${opts.name} not ready after ${timeoutMs} ms:\n${out.slice(-4000)}`));
      };
      listeners.add(check);
      let probing = false;
      const poll = setInterval(() => {
        check();
        if (done || probing || (!opts.readyUrl && !opts.readyCheck)) return;
        probing = true;
        const probe = opts.readyCheck ?? (() => urlOk(opts.readyUrl as string));
        probe()
          .then((ok) => (ok ? finish() : undefined))
          .catch(() => undefined)
          .finally(() => (probing = false));
      }, 50);
      check();
    });
  } catch (err) {
    await proc.kill();
    throw err;
  }
  return proc;
}

async function urlOk(url: string): Promise<boolean> {
  try {
    const res = await fetch(url, { signal: AbortSignal.timeout(1000) });
    await res.arrayBuffer();
    return res.ok;
  } catch {
    return false;
  }
}

/**
 * A TCP port free at the time of the call, picked at random below the
 * kernel's ephemeral range (ip_local_port_range) and outside the NodePort
 * range (30000-32767): a port from the ephemeral range can be taken, between
 * this call and the server's listen, by any outgoing connection on the
 * machine as its local port (seen in CI as EADDRINUSE).
 */
export async function freePort(): Promise<number> {
  const [ephemeralLow] = readFileSync("/proc/sys/net/ipv4/ip_local_port_range", "utf8").trim().split(/\s+/).map(Number);
  const high = Math.min(29_999, (ephemeralLow ?? 32_768) - 1);
  const low = 10_000;
  for (let attempt = 0; high > low && attempt < 100; attempt++) {
    const port = low + Math.floor(Math.random() * (high - low + 1));
    if (await canListen(port)) return port;
  }
  return listenOn(0); // an unusual range: let the kernel choose
}

function canListen(port: number): Promise<boolean> {
  return listenOn(port).then(
    () => true,
    () => false,
  );
}

/** Listens on 127.0.0.1:port, closes, and resolves with the port it had. */
function listenOn(port: number): Promise<number> {
  return new Promise((resolve, reject) => {
    const srv = net.createServer();
    srv.unref();
    srv.on("error", reject);
    srv.listen(port, "127.0.0.1", () => {
      const addr = srv.address();
      const bound = typeof addr === "object" && addr ? addr.port : 0;
      srv.close(() => resolve(bound));
    });
  });
}

/** Polls `fn` until it returns a truthy value (returned) or the timeout passes (throws with `message`). */
export async function waitFor<T>(fn: () => T | Promise<T>, opts: { timeoutMs?: number; intervalMs?: number; message?: string } = {}): Promise<NonNullable<T>> {
  const deadline = Date.now() + (opts.timeoutMs ?? 20_000);
  let last: unknown;
  for (;;) {
    try {
      const v = await fn();
      if (v) return v as NonNullable<T>;
    } catch (err) {
      last = err;
    }
    if (Date.now() > deadline) {
      const why = last instanceof Error ? `: ${last.message}` : "";
      throw new Error(`timed out waiting for ${opts.message ?? "condition"}${why}`);
    }
    await new Promise((r) => setTimeout(r, opts.intervalMs ?? 50));
  }
}
