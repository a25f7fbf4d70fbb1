import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { freePort, startProcess, type ManagedProcess } from "./process.js";

/** A nats-server or redis-server started for a test or a local cluster. */
export interface ServerHandle {
  readonly url: string;
  readonly port: number;
  readonly dir: string;
  process(): ManagedProcess;
  /** kill -9 (data on disk stays). */
  kill(): Promise<void>;
  /** Starts it again on the same port and directory. */
  restart(): Promise<void>;
  /** SIGTERM and wait; removes the directory if the harness made it. */
  stop(): Promise<void>;
}

interface ServerSpec {
  name: string;
  cmd: string;
  args: (port: number, dir: string) => string[];
  ready: RegExp;
  url: (port: number) => string;
}

async function startServer(spec: ServerSpec, opts: { dir?: string; port?: number; logFile?: string }): Promise<ServerHandle> {
  const owned = !opts.dir;
  const dir = opts.dir ?? mkdtempSync(path.join(os.tmpdir(), `choreo-${spec.name}-`));
  mkdirSync(dir, { recursive: true });
  const port = opts.port ?? (await freePort());
  const launch = (): Promise<ManagedProcess> =>
    startProcess({ name: spec.name, cmd: spec.cmd, args: spec.args(port, dir), readyWhen: spec.ready, timeoutMs: 30_000, logFile: opts.logFile });
  let proc = await launch();
  return {
    url: spec.url(port),
    port,
    dir,
    process: () => proc,
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

/** nats-server with JetStream on a free port (or the given one), data in `dir`. */
export function startNats(opts: { dir?: string; port?: number; logFile?: string } = {}): Promise<ServerHandle> {
  return startServer(
    {
      name: "nats-server",
      cmd: "nats-server",
      args: (port, dir) => {
        // Objects may be 1.5 MiB; the default 1 MiB payload limit is too small.
        const conf = path.join(dir, "nats.conf");
        writeFileSync(conf, "max_payload: 8388608\n");
        return ["-c", conf, "-js", "-a", "127.0.0.1", "-p", String(port), "-sd", dir];
      },
      ready: /Server is ready/,
      url: (port) => `nats://127.0.0.1:${port}`,
    },
    opts,
  );
}

/** redis-server with AOF on a free port (or the given one), data in `dir`. */
export function startRedis(opts: { dir?: string; port?: number; logFile?: string } = {}): Promise<ServerHandle> {
  return startServer(
    {
      name: "redis-server",
      cmd: "redis-server",
      args: (port, dir) => [
        "--port", String(port), "--bind", "127.0.0.1", "--dir", dir, "--save", "", "--appendonly", "yes",
        "--appendfsync", "everysec", "--protected-mode", "no", "--daemonize", "no",
      ],
      ready: /Ready to accept connections/,
      url: (port) => `redis://127.0.0.1:${port}`,
    },
    opts,
  );
}
