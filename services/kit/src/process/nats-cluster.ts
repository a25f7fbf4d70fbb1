// A NATS cluster for tests, benchmarks and a local HA control plane: N
// nats-server processes on loopback, each with its server_name, JetStream
// store and a `cluster { name listen routes }` block naming every member, the
// routes authenticated with a password of their own. Clients log in as with
// startNats: one user list shared by all members (`choreo` first), users
// added on every member at once.
import { mkdirSync, mkdtempSync, rmSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { randomSecret, withCredentials, writeCredentials, type NatsPermissions, type NatsUser } from "../secrets/secrets.js";
import { freePort, type ManagedProcess } from "./process.js";
import { BUS_SANS, ensureBusTls, isLoopbackHost } from "../secrets/bus-tls.js";
import { startServer, writeNatsConf, type ServerHandle, type StartedServer } from "./servers.js";

/** Options of {@link startNatsCluster}. */
export interface NatsClusterOptions {
  /** How many servers (default 3: a quorum survives the loss of one). */
  size?: number;
  /** Where the members' directories go (`<dir>/nats-<i>`); default a temporary directory removed by stop(). */
  dir?: string;
  /** Each member's output is appended to `<logDir>/nats-<i>.log` when given. */
  logDir?: string;
  /** The cluster's name (default `choreo`). */
  name?: string;
  /**
   * The address clients reach the members on (default 127.0.0.1). Beyond
   * loopback the client port speaks TLS only, every member with a certificate
   * of one CA (`<dir>/tls`, the handle's `caFile`), as startNats does; routes
   * stay on loopback.
   */
  host?: string;
}

/** One server of the cluster: a ServerHandle of its own (its `url` names it alone) and its server_name. */
export interface NatsClusterMember extends ServerHandle {
  /** Its server_name: what stream info's `cluster.leader` and `cluster.replicas[].name` say. */
  readonly name: string;
  readonly clusterPort: number;
  /** kill -9 then start again on the same ports and store, and wait until it knows the JetStream metadata leader. */
  restart(): Promise<void>;
}

/**
 * The cluster as one server: `url` and `address` list every member
 * (comma-separated; `connectBus` takes the list and reconnects to any),
 * `addUser` adds the user on every member, kill/restart/stop act on all.
 */
export interface NatsClusterHandle extends ServerHandle {
  readonly members: NatsClusterMember[];
  /** The CA clients verify the members with, when they speak TLS (`host` beyond loopback). */
  readonly caFile?: string;
  /** The member with this server_name (throws when none). */
  member(name: string): NatsClusterMember;
}

/** What a member logs once the JetStream meta group has a leader (itself or another). */
const META_LEADER = /JetStream cluster new metadata leader|Self is new JetStream cluster metadata leader/;

/** The `server_name` and `cluster` block of one member's nats.conf: routes to every member (itself included, which nats-server skips). */
function clusterBlock(name: string, cluster: string, clusterPort: number, route: { user: string; password: string }, routes: string[]): string {
  return [
    `server_name: ${JSON.stringify(name)}`,
    "cluster {",
    `  name: ${JSON.stringify(cluster)}`,
    `  listen: "127.0.0.1:${clusterPort}"`,
    `  authorization { user: ${JSON.stringify(route.user)}, password: ${JSON.stringify(route.password)} }`,
    `  routes: [ ${routes.map((r) => JSON.stringify(r)).join(", ")} ]`,
    "}",
    "",
  ].join("\n");
}

/**
 * Starts `size` nats-servers clustered on loopback (plain, as startNats on
 * loopback) and waits until JetStream's meta group has a leader on each:
 * streams with `num_replicas` up to `size` can then be made.
 */
export async function startNatsCluster(opts: NatsClusterOptions = {}): Promise<NatsClusterHandle> {
  const size = opts.size ?? 3;
  if (!Number.isInteger(size) || size < 1) throw new Error(`a NATS cluster needs at least one server, got ${size}`);
  const owned = !opts.dir;
  const dir = opts.dir ?? mkdtempSync(path.join(os.tmpdir(), "choreo-nats-cluster-"));
  mkdirSync(dir, { recursive: true, mode: 0o700 });
  const clusterName = opts.name ?? "choreo";
  const users: NatsUser[] = [{ user: "choreo", password: randomSecret() }];
  const credentialsFile = path.join(dir, "credentials");
  writeCredentials(credentialsFile, users[0]!);
  // Routes log in too: a server that does not know this password cannot join (nor read the cluster's traffic).
  const route = { user: "route", password: randomSecret() };
  let ports: { client: number; cluster: number }[] = [];
  const block = (i: number): string =>
    clusterBlock(
      `nats-${i}`,
      clusterName,
      ports[i]!.cluster,
      route,
      ports.map((p) => withCredentials(`nats-route://127.0.0.1:${p.cluster}`, route)),
    );
  const host = opts.host ?? "127.0.0.1";
  const tls = isLoopbackHost(host) ? undefined : await ensureBusTls(path.join(dir, "tls"), [...new Set([host, ...BUS_SANS])]);
  let started: StartedServer[] = [];
  const launchMember = (i: number): Promise<StartedServer> =>
    startServer(
      {
        name: `nats-${i}`,
        cmd: "nats-server",
        args: (port, memberDir, list) => {
          writeNatsConf(memberDir, list, tls, block(i));
          return ["-c", path.join(memberDir, "nats.conf"), "-a", host, "-p", String(port)];
        },
        rewrite: (memberDir, list) => writeNatsConf(memberDir, list, tls, block(i)),
        ready: /Server is ready/,
        url: (port) => `nats://${host}:${port}`,
        user: "choreo",
      },
      { dir: path.join(dir, `nats-${i}`), port: ports[i]!.client, users, logFile: opts.logDir ? path.join(opts.logDir, `nats-${i}.log`) : undefined },
    );
  const metaLeaderKnown = async (s: StartedServer, name: string, timeoutMs = 60_000): Promise<void> => {
    const deadline = Date.now() + timeoutMs;
    while (!META_LEADER.test(s.process().output())) {
      // It says "ready" before it listens for routes: a cluster port taken meanwhile ends it after that.
      if (!s.process().isRunning()) throw new Error(`${name} exited: ${s.process().output().slice(-500)}`);
      if (Date.now() > deadline) throw new Error(`timed out waiting for ${name} to know the JetStream metadata leader: ${s.process().output().slice(-500)}`);
      await new Promise((r) => setTimeout(r, 50));
    }
  };
  for (let attempt = 1; ; attempt++) {
    ports = await Promise.all(Array.from({ length: size }, async () => ({ client: await freePort(), cluster: await freePort() })));
    started = [];
    try {
      // All at once: the meta group elects a leader only once a quorum of them runs.
      await Promise.all(ports.map((_, i) => launchMember(i).then((s) => (started[i] = s))));
      await Promise.all(started.map((s, i) => metaLeaderKnown(s, `nats-${i}`, 30_000)));
      break;
    } catch (err) {
      await Promise.all(started.filter(Boolean).map((s) => s.stop().catch(() => undefined)));
      // A port taken by another test between freePort and the listen, or no metadata leader (seen 3 times in a row on
      // a loaded machine, never reproduced alone): new ports and stores, up to three times.
      const clash = /EADDRINUSE|address already in use|exited|metadata leader/i.test(String((err as Error).message));
      if (clash && attempt < 3) {
        for (let i = 0; i < size; i++) rmSync(path.join(dir, `nats-${i}`), { recursive: true, force: true });
        continue;
      }
      if (owned) rmSync(dir, { recursive: true, force: true });
      throw err;
    }
  }
  const members: NatsClusterMember[] = started.map((s, i) => ({
    ...s,
    name: `nats-${i}`,
    clusterPort: ports[i]!.cluster,
    async restart() {
      await s.restart();
      await metaLeaderKnown(s, `nats-${i}`);
    },
  }));
  const files = new Map<string, string>();
  const address = members.map((m) => m.address).join(",");
  return {
    url: members.map((m) => m.url).join(","),
    address,
    credentials: { ...users[0]! },
    credentialsFile,
    port: members[0]!.port,
    dir,
    members,
    ...(tls ? { caFile: tls.caFile } : {}),
    member(name) {
      const m = members.find((x) => x.name === name);
      if (!m) throw new Error(`no NATS cluster member ${JSON.stringify(name)} (${members.map((x) => x.name).join(", ")})`);
      return m;
    },
    process: (): ManagedProcess => members[0]!.process(),
    async addUser(name: string, permissions: NatsPermissions) {
      const known = files.get(name);
      if (known) return known;
      if (users.some((u) => u.user === name)) throw new Error(`the NATS cluster already has a user ${name}`);
      const c: NatsUser = { user: name, password: randomSecret(), permissions };
      const file = path.join(dir, `${name}.credentials`);
      writeCredentials(file, c);
      users.push(c);
      // Every member that runs; a member down now reads the list when it starts again.
      await Promise.all(started.filter((s) => s.process().isRunning()).map((s) => s.reload()));
      files.set(name, file);
      return file;
    },
    kill: async () => {
      await Promise.all(members.map((m) => m.kill()));
    },
    restart: async () => {
      await Promise.all(members.map((m) => m.kill()));
      await Promise.all(started.map((s) => s.restart()));
      await Promise.all(started.map((s, i) => metaLeaderKnown(s, `nats-${i}`)));
    },
    async stop() {
      await Promise.all(started.map((s) => s.stop()));
      if (owned) rmSync(dir, { recursive: true, force: true });
    },
  };
}
