import { chmodSync, mkdirSync, mkdtempSync, rmSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { natsAuthorization, randomSecret, redisAcl, withCredentials, writeCredentials, writeSecretFile, type Credentials } from "../secrets/secrets.js";
import { freePort, startProcess, type ManagedProcess } from "./process.js";

/**
 * A nats-server or redis-server started for a test or a local cluster,
 * with authentication: a random password made at start (kept across
 * restart()), the server's config and a credentials file written 0600 in
 * `dir` (itself 0700). Anonymous clients are refused.
 */
export interface ServerHandle {
  /** The URL with the credentials as userinfo (`nats://choreo:…@127.0.0.1:port`): what tests pass around. */
  readonly url: string;
  /** The URL without credentials: a client using it alone is refused. */
  readonly address: string;
  /** The one user a client logs in as (nats: `choreo`, redis: `api`). */
  readonly credentials: Credentials;
  /** `user:password` (mode 0600) in `dir`: what CHOREO_NATS_CREDENTIALS / CHOREO_REDIS_CREDENTIALS name. */
  readonly credentialsFile: string;
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
  /** The command line; writes the server's config (0600) first. */
  args: (port: number, dir: string, users: Credentials[]) => string[];
  ready: RegExp;
  url: (port: number) => string;
  user: string;
}

async function startServer(spec: ServerSpec, opts: { dir?: string; port?: number; logFile?: string }): Promise<ServerHandle> {
  // scripts/run-tests.mjs sets this for the hermetic tier: a test that gets here needs the servers tier.
  if (process.env.CHOREO_TEST_TIER === "fast") {
    throw new Error(
      `${spec.name} asked for in the fast test tier (CHOREO_TEST_TIER=fast): a test that starts servers begins with the line "// test-tier: servers"`,
    );
  }
  const owned = !opts.dir;
  const dir = opts.dir ?? mkdtempSync(path.join(os.tmpdir(), `choreo-${spec.name}-`));
  mkdirSync(dir, { recursive: true });
  // The data (Redis holds every object, Secrets included) and the config with the passwords: the owner's alone.
  chmodSync(dir, 0o700);
  const port = opts.port ?? (await freePort());
  const credentials: Credentials = { user: spec.user, password: randomSecret() };
  const credentialsFile = path.join(dir, "credentials");
  writeCredentials(credentialsFile, credentials);
  const launch = (): Promise<ManagedProcess> =>
    startProcess({
      name: spec.name,
      cmd: spec.cmd,
      args: spec.args(port, dir, [credentials]),
      readyWhen: spec.ready,
      timeoutMs: 30_000,
      logFile: opts.logFile,
    });
  let proc = await launch();
  const address = spec.url(port);
  return {
    url: withCredentials(address, credentials),
    address,
    credentials,
    credentialsFile,
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

/** nats-server with JetStream on a free port (or the given one), data in `dir`; one user, `choreo`, and no anonymous clients. */
export function startNats(opts: { dir?: string; port?: number; logFile?: string } = {}): Promise<ServerHandle> {
  return startServer(
    {
      name: "nats-server",
      cmd: "nats-server",
      args: (port, dir, users) => {
        // Objects may be 1.5 MiB; the default 1 MiB payload limit is too small.
        const conf = path.join(dir, "nats.conf");
        writeSecretFile(conf, `max_payload: 8388608\n${natsAuthorization(users)}`);
        return ["-c", conf, "-js", "-a", "127.0.0.1", "-p", String(port), "-sd", dir];
      },
      ready: /Server is ready/,
      url: (port) => `nats://127.0.0.1:${port}`,
      user: "choreo",
    },
    opts,
  );
}

/** redis-server with AOF on a free port (or the given one), data in `dir`; loopback, protected mode, one ACL user `api`, `default` off. */
export function startRedis(opts: { dir?: string; port?: number; logFile?: string } = {}): Promise<ServerHandle> {
  return startServer(
    {
      name: "redis-server",
      cmd: "redis-server",
      args: (port, dir, users) => {
        // The ACL users in a file only the owner reads (never a password on the command line).
        const conf = path.join(dir, "redis.conf");
        writeSecretFile(conf, redisAcl(users));
        return [
          conf,
          "--port",
          String(port),
          "--bind",
          "127.0.0.1",
          "--dir",
          dir,
          "--save",
          "",
          "--appendonly",
          "yes",
          "--appendfsync",
          "everysec",
          "--protected-mode",
          "yes",
          "--daemonize",
          "no",
        ];
      },
      ready: /Ready to accept connections/,
      url: (port) => `redis://127.0.0.1:${port}`,
      user: "api",
    },
    opts,
  );
}
