// test-tier: servers
// No anonymous client on the bus or the store: the harness's nats-server
// and redis-server (the ones every test and `choreo up` run) refuse a client
// without credentials or with a wrong password, Redis's `default` user is
// off, and the configs and credentials files are the owner's alone.
import assert from "node:assert/strict";
import { mkdtempSync, readFileSync, rmSync, writeFileSync, chmodSync, statSync } from "node:fs";
import { once } from "node:events";
import net from "node:net";
import os from "node:os";
import path from "node:path";
import { after, before, describe, it } from "node:test";
import { connect } from "@nats-io/transport-node";
import { Redis } from "ioredis";
import { connectBus } from "../bus/stream.js";
import { natsConnectOptions, readCredentials, redactUrl, redisConnectUrl, stripCredentials, withCredentials, writeCredentials } from "../secrets/secrets.js";
import { startNats, startRedis, type ServerHandle } from "./servers.js";

const mode = (f: string): number => statSync(f).mode & 0o777;

/** Sends commands to Redis over a raw socket, one connection, and returns the first line of each reply. */
async function resp(port: number, ...commands: string[][]): Promise<string[]> {
  const sock = net.connect({ host: "127.0.0.1", port });
  await once(sock, "connect");
  const replies: string[] = [];
  let buf = "";
  for (const cmd of commands) {
    sock.write(`*${cmd.length}\r\n${cmd.map((a) => `$${Buffer.byteLength(a)}\r\n${a}\r\n`).join("")}`);
    while (!buf.includes("\r\n")) buf += String((await once(sock, "data"))[0]);
    const at = buf.indexOf("\r\n");
    replies.push(buf.slice(0, at));
    buf = "";
  }
  sock.destroy();
  return replies;
}

describe("nats-server and redis-server require credentials", () => {
  let nats: ServerHandle;
  let redis: ServerHandle;
  before(async () => {
    [nats, redis] = await Promise.all([startNats(), startRedis()]);
  });
  after(async () => {
    await Promise.all([nats?.stop(), redis?.stop()]);
  });

  it("nats: an anonymous client is refused", async () => {
    assert.doesNotMatch(nats.address, /@/);
    await assert.rejects(connect({ servers: nats.address, maxReconnectAttempts: 0 }), /Authorization Violation/);
    // connectBus without a URL userinfo nor a credentials file is anonymous too.
    await assert.rejects(connectBus(nats.address, "anonymous", ""), /Authorization Violation/);
  });

  it("nats: a wrong password or an unknown user is refused", async () => {
    await assert.rejects(connect({ servers: nats.address, user: "choreo", pass: "not-the-password", maxReconnectAttempts: 0 }), /Authorization Violation/);
    await assert.rejects(
      connect({ servers: nats.address, user: "someone", pass: nats.credentials.password, maxReconnectAttempts: 0 }),
      /Authorization Violation/,
    );
    await assert.rejects(connectBus(withCredentials(nats.address, { user: "choreo", password: "wrong" }), "wrong"), /Authorization Violation/);
  });

  it("nats: the URL's userinfo or the credentials file lets a client in, also after a restart", async () => {
    const viaUrl = await connectBus(nats.url, "via-url");
    const viaFile = await connectBus(nats.address, "via-file", nats.credentialsFile);
    const reply = viaFile.subscribe("auth.echo", { callback: (_e, m) => void m.respond(m.data) });
    await viaFile.flush();
    assert.equal((await viaUrl.request("auth.echo", "hi", { timeout: 2_000 })).string(), "hi");
    reply.unsubscribe();
    await Promise.all([viaUrl.close(), viaFile.close()]);
    await nats.kill();
    await nats.restart();
    await assert.rejects(connect({ servers: nats.address, maxReconnectAttempts: 0 }), /Authorization Violation/);
    const again = await connectBus(nats.url, "after-restart");
    await again.close();
  });

  it("redis: an anonymous client gets NOAUTH, default cannot log in, a wrong password is refused", async () => {
    const [ping, get, asDefault, asDefaultWithApiPass, noUser, wrong, after] = await resp(
      redis.port,
      ["PING"],
      ["GET", "k"],
      ["AUTH", "default", ""],
      ["AUTH", "default", redis.credentials.password],
      ["AUTH", redis.credentials.password],
      ["AUTH", "api", "wrong"],
      ["PING"],
    );
    assert.match(ping ?? "", /^-NOAUTH/);
    assert.match(get ?? "", /^-NOAUTH/);
    for (const r of [asDefault, asDefaultWithApiPass, noUser, wrong]) assert.match(r ?? "", /^-WRONGPASS/);
    assert.match(after ?? "", /^-NOAUTH/);
    assert.deepEqual(await resp(redis.port, ["AUTH", "api", redis.credentials.password], ["PING"]), ["+OK", "+PONG"]);
    // ioredis with the bare address: refused as well.
    const anon = new Redis(redis.address, { maxRetriesPerRequest: 0, retryStrategy: () => null, enableReadyCheck: false });
    anon.on("error", () => undefined);
    await assert.rejects(anon.ping(), /NOAUTH/);
    anon.disconnect();
  });

  it("redis: the api user gets in (URL or credentials file); protected mode on, loopback only", async () => {
    const api = new Redis(redisConnectUrl(redis.address, redis.credentialsFile));
    assert.equal(await api.ping(), "PONG");
    assert.deepEqual(await api.config("GET", "protected-mode"), ["protected-mode", "yes"]);
    assert.deepEqual(await api.config("GET", "bind"), ["bind", "127.0.0.1"]);
    const users = (await api.acl("LIST")) as string[];
    assert.ok(
      users.some((u) => /^user default off\b/.test(u) && !/nopass|[#>]/.test(u)),
      users.join("\n"),
    );
    assert.ok(
      users.some((u) => /^user api on\b/.test(u)),
      users.join("\n"),
    );
    api.disconnect();
    const viaUrl = new Redis(redis.url);
    assert.equal(await viaUrl.ping(), "PONG");
    viaUrl.disconnect();
  });

  it("redis: transactions written before a restart survive it (the AOF replays as default, which is off but keeps its permissions)", async () => {
    const api = new Redis(redis.url);
    await api.multi().set("tx:a", "1").set("tx:b", "2").exec();
    await api.set("plain", "3");
    // appendfsync everysec: on disk within a second.
    await new Promise((res) => setTimeout(res, 1_500));
    api.disconnect();
    await redis.kill();
    await redis.restart();
    const again = new Redis(redis.url);
    try {
      assert.deepEqual(await again.mget("tx:a", "tx:b", "plain"), ["1", "2", "3"]);
    } finally {
      again.disconnect();
    }
    assert.match((await resp(redis.port, ["PING"]))[0] ?? "", /^-NOAUTH/);
  });

  it("the servers' configs and credentials are 0600 in a 0700 directory; no password on a command line", () => {
    for (const s of [nats, redis]) {
      assert.equal(mode(s.dir), 0o700, s.dir);
      assert.equal(mode(s.credentialsFile), 0o600, s.credentialsFile);
      assert.deepEqual(readCredentials(s.credentialsFile), s.credentials);
      assert.ok(!s.process().child.spawnargs.join(" ").includes(s.credentials.password), "password in argv");
    }
    assert.equal(mode(path.join(nats.dir, "nats.conf")), 0o600);
    assert.equal(mode(path.join(redis.dir, "redis.conf")), 0o600);
    assert.match(readFileSync(path.join(nats.dir, "nats.conf"), "utf8"), /authorization \{/);
    assert.doesNotMatch(readFileSync(path.join(nats.dir, "nats.conf"), "utf8"), /no_auth_user/);
  });
});

describe("secrets helpers", () => {
  const dir = mkdtempSync(path.join(os.tmpdir(), "choreo-secrets-"));
  after(() => rmSync(dir, { recursive: true, force: true }));

  it("credentials files are written 0600 and refused when others may read them", () => {
    const f = path.join(dir, "creds");
    writeCredentials(f, { user: "choreo", password: "abc123" });
    assert.equal(mode(f), 0o600);
    assert.deepEqual(readCredentials(f), { user: "choreo", password: "abc123" });
    chmodSync(f, 0o644);
    assert.throws(() => readCredentials(f), /readable by others/);
    const bad = path.join(dir, "bad");
    writeFileSync(bad, "no-colon\n", { mode: 0o600 });
    assert.throws(() => readCredentials(bad), /user:password/);
  });

  it("URLs: userinfo to options (nats.js ignores it), credentials file, redaction", () => {
    // With a user, its own inboxes (_INBOX_<user>: the only ones nats-server lets a restricted user subscribe to).
    assert.deepEqual(natsConnectOptions("nats://choreo:p%40ss@127.0.0.1:4222"), {
      servers: "nats://127.0.0.1:4222",
      user: "choreo",
      pass: "p@ss",
      inboxPrefix: "_INBOX_choreo",
    });
    assert.deepEqual(natsConnectOptions("nats://127.0.0.1:4222"), { servers: "nats://127.0.0.1:4222" });
    const f = path.join(dir, "nats");
    writeCredentials(f, { user: "choreo", password: "fromfile" });
    assert.deepEqual(natsConnectOptions("nats://127.0.0.1:4222", f), {
      servers: "nats://127.0.0.1:4222",
      user: "choreo",
      pass: "fromfile",
      inboxPrefix: "_INBOX_choreo",
    });
    // The URL's own userinfo wins over the file.
    assert.equal(natsConnectOptions("nats://a:b@127.0.0.1:4222", f).pass, "b");
    assert.equal(redisConnectUrl("redis://redis:6379", f), "redis://choreo:fromfile@redis:6379");
    assert.equal(stripCredentials("redis://api:x@redis:6379"), "redis://redis:6379");
    assert.equal(redactUrl("nats://choreo:secret@127.0.0.1:4222"), "nats://choreo:***@127.0.0.1:4222");
    assert.equal(redactUrl("nats://127.0.0.1:4222"), "nats://127.0.0.1:4222");
    assert.equal(redactUrl("not a url"), "not a url");
  });
});
