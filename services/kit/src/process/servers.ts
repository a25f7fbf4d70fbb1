import { chmodSync, mkdirSync, mkdtempSync, rmSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import {
  natsAuthorization,
  randomSecret,
  redisAcl,
  withCredentials,
  writeCredentials,
  writeSecretFile,
  type Credentials,
  type NatsPermissions,
  type NatsUser,
} from "../secrets/secrets.js";
import { BUS_SANS, ensureBusTls, isLoopbackHost, natsTlsBlock, type BusTlsFiles } from "../secrets/bus-tls.js";
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
  /**
   * nats-server only: adds user `name` with `permissions` (see
   * secrets/nats-users.ts), its password random, its `user:password` file
   * (0600) returned — what its process gets as CHOREO_NATS_CREDENTIALS; the
   * server reloads its config (SIGHUP) before this resolves. A user already
   * there keeps its password and permissions.
   */
  addUser(name: string, permissions: NatsPermissions): Promise<string>;
  /** kill -9 (data on disk stays). */
  kill(): Promise<void>;
  /** Starts it again on the same port and directory. */
  restart(): Promise<void>;
  /** SIGTERM and wait; removes the directory if the harness made it. */
  stop(): Promise<void>;
}

export interface ServerSpec {
  name: string;
  cmd: string;
  /** The command line; writes the server's config (0600) first. */
  args: (port: number, dir: string, users: NatsUser[]) => string[];
  /** Runs once in `dir` before the first launch (certificates). */
  prepare?: (dir: string) => Promise<void>;
  /** Rewrites the config with `users` (for a reload); undefined: the server cannot add users. */
  rewrite?: (dir: string, users: NatsUser[]) => void;
  ready: RegExp;
  url: (port: number) => string;
  user: string;
}

/** What {@link startServer} returns: a handle and the reload a NATS cluster runs on every member once its shared users changed. */
export interface StartedServer extends ServerHandle {
  /** Rewrites the config from the (shared) user list and reloads it (SIGHUP), waiting for nats-server to say so. */
  reload(): Promise<void>;
}

/**
 * Starts one server of `spec`. `users` (nats-server only) is a user list
 * shared with other servers (a NATS cluster's members): its first user is
 * the client's credentials instead of a new random password.
 */
export async function startServer(spec: ServerSpec, opts: { dir?: string; port?: number; logFile?: string; users?: NatsUser[] }): Promise<StartedServer> {
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
  const users: NatsUser[] = opts.users ?? [{ user: spec.user, password: randomSecret() }];
  const credentials: Credentials = { user: users[0]!.user, password: users[0]!.password };
  const credentialsFile = path.join(dir, "credentials");
  writeCredentials(credentialsFile, credentials);
  const files = new Map<string, string>();
  await spec.prepare?.(dir);
  const launch = (): Promise<ManagedProcess> =>
    startProcess({
      name: spec.name,
      cmd: spec.cmd,
      args: spec.args(port, dir, users),
      readyWhen: spec.ready,
      timeoutMs: 30_000,
      logFile: opts.logFile,
    });
  let proc = await launch();
  const address = spec.url(port);
  const reload = async (): Promise<void> => {
    if (!spec.rewrite) throw new Error(`${spec.name} cannot add users`);
    spec.rewrite(dir, users);
    const reloads = (): number => proc.output().split("Reloaded server configuration").length;
    const before = reloads();
    proc.child.kill("SIGHUP");
    for (let i = 0; reloads() === before; i++) {
      if (i > 300 || !proc.isRunning()) throw new Error(`${spec.name} did not reload its config: ${proc.output().slice(-500)}`);
      await new Promise((r) => setTimeout(r, 20));
    }
  };
  return {
    url: withCredentials(address, credentials),
    address,
    credentials,
    credentialsFile,
    port,
    dir,
    process: () => proc,
    async addUser(name, permissions) {
      const known = files.get(name);
      if (known) return known;
      if (!spec.rewrite) throw new Error(`${spec.name} cannot add users`);
      if (users.some((u) => u.user === name)) throw new Error(`${spec.name} already has a user ${name}`);
      const c: NatsUser = { user: name, password: randomSecret(), permissions };
      const file = path.join(dir, `${name}.credentials`);
      writeCredentials(file, c);
      users.push(c);
      await reload();
      files.set(name, file);
      return file;
    },
    reload,
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

/**
 * nats.conf in `dir`: objects may be 1.5 MiB (the default 1 MiB payload limit is too small), TLS when given, then the users;
 * `cluster` (a NATS cluster's member: its server_name and cluster block) goes first.
 */
export function writeNatsConf(dir: string, users: NatsUser[], tls: BusTlsFiles | undefined, cluster = ""): void {
  // JetStream in the config, not by flags (-js, -sd): a reload (addUser) re-reads the file, and JetStream must stay on.
  writeSecretFile(
    path.join(dir, "nats.conf"),
    `${cluster}max_payload: 8388608\njetstream { store_dir: ${JSON.stringify(dir)} }\n${tls ? natsTlsBlock(tls) : ""}${natsAuthorization(users)}`,
  );
}

/** Options of {@link startNats}. */
export interface NatsOptions {
  dir?: string;
  port?: number;
  logFile?: string;
  /** The address nats-server listens on (default 127.0.0.1); anything but loopback gets TLS. */
  host?: string;
  /** TLS even on loopback (a test of the TLS path). */
  tls?: boolean;
}

/** A nats-server handle; `caFile` is set when it requires TLS (what a client verifies it with: connectBus's `caFile`, CHOREO_NATS_CA). */
export interface NatsHandle extends ServerHandle {
  readonly caFile?: string;
}

/**
 * nats-server with JetStream on a free port (or the given one), data in
 * `dir`; one user, `choreo`, and no anonymous clients. Listening beyond
 * loopback (`host`), or with `tls`, it requires TLS with a certificate of
 * its own CA for the host, `localhost` and 127.0.0.1 (`<dir>/tls`).
 */
export async function startNats(opts: NatsOptions = {}): Promise<NatsHandle> {
  const host = opts.host ?? "127.0.0.1";
  let tls: BusTlsFiles | undefined;
  const withTls = opts.tls || !isLoopbackHost(host);
  const handle = await startServer(
    {
      name: "nats-server",
      cmd: "nats-server",
      prepare: async (dir) => {
        // The address it listens on is a name the certificate carries (a wildcard address is none).
        const sans = host === "0.0.0.0" || host === "::" ? BUS_SANS : [host, ...BUS_SANS];
        if (withTls) tls = await ensureBusTls(path.join(dir, "tls"), [...new Set(sans)]);
      },
      args: (port, dir, users) => {
        writeNatsConf(dir, users, tls);
        return ["-c", path.join(dir, "nats.conf"), "-a", host, "-p", String(port)];
      },
      rewrite: (dir, users) => writeNatsConf(dir, users, tls),
      ready: /Server is ready/,
      url: (port) => `nats://${host === "0.0.0.0" ? "127.0.0.1" : host.includes(":") ? `[${host}]` : host}:${port}`,
      user: "choreo",
    },
    opts,
  );
  return tls ? { ...handle, caFile: tls.caFile } : handle;
}

/** redis-server's command line: `conf` (the ACL users), loopback on `port`, data in `dir`, AOF with an fsync every second, protected mode. */
export function redisServerArgs(conf: string, port: number, dir: string): string[] {
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
        return redisServerArgs(conf, port, dir);
      },
      ready: /Ready to accept connections/,
      url: (port) => `redis://127.0.0.1:${port}`,
      user: "api",
    },
    opts,
  );
}
