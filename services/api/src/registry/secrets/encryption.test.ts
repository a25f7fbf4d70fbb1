// test-tier: servers
// Secrets encrypted at rest over real redis-server and nats-server: what Redis
// and the event log hold carries neither a Secret's values nor its key names;
// the api's clients (get, list, watch over HTTP) get the plaintext; keys rotate;
// a Secret no key opens is a 500 for that Secret alone.
import assert from "node:assert/strict";
import { randomBytes } from "node:crypto";
import { Writable } from "node:stream";
import { after, before, describe, it } from "node:test";
import { resourceFilter, consumeEvents } from "@choreo/kit/bus";
import { WatchEvent, type Object as ApiObject } from "@choreo/kit/gen/choreo/api/v1/api";
import { fromKubeJson } from "@choreo/kit/kube-json";
import { createLogger } from "@choreo/kit/log";
import { waitFor } from "@choreo/kit/testing";
import type { Subscription } from "@nats-io/transport-node";
import { createGateway, type Gateway } from "../../http/gateway.js";
import { startStack, type Stack } from "../../testing/stack.js";
import { createRegistry, SecretSealer, type EncryptionKey } from "../index.js";
import { SEAL_PREFIX } from "./seal.js";

const VALUE = "correct-horse-battery-staple-7f3a";
const KEY_NAME = "db-password-key-9c1e";
const ANNOTATED = "annotated-secret-value-51bd";
const TOKEN = "encryption-test-token";
type Json = Record<string, unknown>;

const key = (name: string): EncryptionKey => ({ name, secret: randomBytes(32) });
const secret = (name: string, extra: Json = {}): ApiObject =>
  fromKubeJson({ apiVersion: "v1", kind: "Secret", metadata: { name, namespace: "default" }, stringData: { [KEY_NAME]: VALUE }, ...extra });

/** Every Redis key and every byte under it (strings, hashes, sets, streams), as one buffer per key. */
async function dumpRedis(stack: Stack): Promise<{ key: string; bytes: Buffer }[]> {
  const r = stack.redisClient;
  const out: { key: string; bytes: Buffer }[] = [];
  for (const k of await r.keys("*")) {
    const type = await r.type(k);
    let parts: Buffer[] = [];
    if (type === "string") parts = [(await r.getBuffer(k)) ?? Buffer.alloc(0)];
    else if (type === "hash") parts = Object.entries(await r.hgetallBuffer(k)).flatMap(([f, v]) => [Buffer.from(f), v]);
    else if (type === "zset" || type === "list" || type === "set")
      parts = (type === "zset" ? await r.zrangeBuffer(k, 0, -1) : type === "list" ? await r.lrangeBuffer(k, 0, -1) : await r.smembersBuffer(k)) as Buffer[];
    else if (type === "stream") parts = (await r.xrangeBuffer(k, "-", "+")).flatMap(([id, fields]) => [id, ...fields]);
    out.push({ key: k, bytes: Buffer.concat(parts) });
  }
  return out;
}

describe("secrets encrypted at rest", () => {
  let stack: Stack;
  let gateway: Gateway;
  let base: string;
  const logLines: string[] = [];
  const raw: Buffer[] = [];
  let sub: Subscription;
  const oldKey = key("old");

  before(async () => {
    // The api's logs at debug level, kept to be searched for plaintext.
    const destination = new Writable({
      write(chunk: Buffer, _enc, done) {
        logLines.push(chunk.toString());
        done();
      },
    });
    const log = createLogger({ service: "api", level: "debug", destination });
    stack = await startStack({ encryptionKeys: [oldKey], log });
    // A plain subscriber of the event subjects (`nats sub 'choreo.ev.secrets.>'`).
    sub = stack.nc.subscribe(resourceFilter("secrets"));
    void (async () => {
      for await (const m of sub) raw.push(Buffer.from(m.data));
    })();
    gateway = createGateway({ handlers: stack.registry, log, tokens: [TOKEN] });
    const { httpPort } = await gateway.listen({ host: "127.0.0.1", httpPort: 0 });
    base = `http://127.0.0.1:${httpPort}`;
  });
  after(async () => {
    sub.unsubscribe();
    await gateway.close();
    await stack.stop();
  });

  const http = async (path: string, init: RequestInit = {}): Promise<{ status: number; body: Json }> => {
    const res = await fetch(`${base}${path}`, { ...init, headers: { authorization: `Bearer ${TOKEN}`, "content-type": "application/json", ...init.headers } });
    return { status: res.status, body: (await res.json()) as Json };
  };
  const b64 = Buffer.from(VALUE).toString("base64");

  it("neither Redis nor the event log holds a value or a key name; get, list and watch give the plaintext", async () => {
    const created = await http("/api/v1/namespaces/default/secrets", {
      method: "POST",
      body: JSON.stringify({ apiVersion: "v1", kind: "Secret", metadata: { name: "db" }, stringData: { [KEY_NAME]: VALUE } }),
    });
    assert.equal(created.status, 201, JSON.stringify(created.body));
    assert.deepEqual(created.body["data"], { [KEY_NAME]: b64 });
    const rv = String((created.body["metadata"] as Json)["resourceVersion"]);
    // A watch from the create on: the changes after it come through the watch cache.
    const ac = new AbortController();
    const watched: Json[] = [];
    const watching = (async () => {
      const res = await fetch(`${base}/api/v1/namespaces/default/secrets?watch=true&resourceVersion=${rv}`, {
        headers: { authorization: `Bearer ${TOKEN}` },
        signal: ac.signal,
      });
      const decoder = new TextDecoder();
      let buf = "";
      for await (const chunk of res.body as unknown as AsyncIterable<Uint8Array>) {
        buf += decoder.decode(chunk, { stream: true });
        for (let nl = buf.indexOf("\n"); nl >= 0; nl = buf.indexOf("\n")) {
          watched.push(JSON.parse(buf.slice(0, nl)) as Json);
          buf = buf.slice(nl + 1);
        }
      }
    })().catch(() => undefined);
    // An update carrying the value in an annotation (as kubectl apply's last-applied configuration does), then a delete.
    const cur = await http("/api/v1/namespaces/default/secrets/db");
    const annotated = { ...cur.body, metadata: { ...(cur.body["metadata"] as Json), annotations: { note: ANNOTATED } } };
    assert.equal((await http("/api/v1/namespaces/default/secrets/db", { method: "PUT", body: JSON.stringify(annotated) })).status, 200);
    await stack.client.create(secret("kept"));

    const got = await http("/api/v1/namespaces/default/secrets/db");
    assert.deepEqual(got.body["data"], { [KEY_NAME]: b64 });
    assert.deepEqual((got.body["metadata"] as Json)["annotations"], { note: ANNOTATED });
    const listed = await http("/api/v1/namespaces/default/secrets");
    assert.deepEqual(
      (listed.body["items"] as Json[]).map((i) => [(i["metadata"] as Json)["name"], i["data"]]),
      [
        ["db", { [KEY_NAME]: b64 }],
        ["kept", { [KEY_NAME]: b64 }],
      ],
    );
    assert.equal((await http("/api/v1/namespaces/default/secrets/db", { method: "DELETE" })).status, 200);
    await waitFor(() => watched.length >= 3, { timeoutMs: 60_000, message: "the watch's MODIFIED, ADDED and DELETED" });
    ac.abort();
    await watching;
    assert.deepEqual(
      watched.map((e) => [e["type"], ((e["object"] as Json)["metadata"] as Json)["name"], (e["object"] as Json)["data"]]),
      [
        ["MODIFIED", "db", { [KEY_NAME]: b64 }],
        ["ADDED", "kept", { [KEY_NAME]: b64 }],
        ["DELETED", "db", { [KEY_NAME]: b64 }],
      ],
    );

    // The subscriber saw the four changes (create, update, create, delete), sealed.
    await waitFor(() => raw.length >= 4, { timeoutMs: 60_000, message: "four secret events on the bus" });
    // A JetStream consumer of the event log from its start.
    const fromLog: Buffer[] = [];
    const stop = new AbortController();
    for await (const ev of consumeEvents({ nc: stack.nc, jsm: stack.jsm, filter: resourceFilter("secrets"), fromRevision: 0, signal: stop.signal })) {
      fromLog.push(Buffer.from(WatchEvent.encode(ev).finish()));
      if (fromLog.length === 4) stop.abort();
    }
    const redis = await dumpRedis(stack);
    const secretKeys = redis.filter((r) => r.key.includes(":secrets:"));
    assert.ok(secretKeys.length >= 1, "the kept secret is in Redis");
    assert.ok(
      secretKeys.some((r) => r.bytes.includes(`${SEAL_PREFIX}old:`)),
      "sealed under the key 'old'",
    );
    for (const plain of [VALUE, KEY_NAME, ANNOTATED, b64]) {
      for (const r of redis) {
        assert.equal(r.key.includes(plain), false, `Redis key ${r.key} names ${plain}`);
        assert.equal(r.bytes.includes(plain), false, `Redis key ${r.key} holds ${plain}`);
      }
      for (const [i, m] of raw.entries()) assert.equal(m.includes(plain), false, `bus message ${i} holds ${plain}`);
      for (const [i, m] of fromLog.entries()) assert.equal(m.includes(plain), false, `event-log message ${i} holds ${plain}`);
      for (const line of logLines) assert.equal(line.includes(plain), false, `log line holds ${plain}: ${line}`);
    }
    assert.ok(
      logLines.some((l) => l.includes('"http request"')),
      "the debug log was captured",
    );
  });

  it("rotation: with a new first key and the old one second, old secrets read and new writes use the new key; without the old key, only its secrets fail, with a 500", async () => {
    const newKey = key("new");
    const rotated = createRegistry({
      store: stack.store,
      serviceCidr: "10.96.0.0/16",
      log: stack.registry.store.log,
      encryption: new SecretSealer([newKey, oldKey]),
    });
    const kept = await rotated.get({ resource: "secrets", namespace: "default", name: "kept" });
    assert.equal(Buffer.from((kept.kind?.value as { data: Record<string, Uint8Array> }).data[KEY_NAME] ?? []).toString(), VALUE);
    await rotated.create({ object: secret("fresh"), dryRun: false });
    const stored = await stack.redisClient.hgetBuffer("{choreo}:o:secrets:default/fresh", "v");
    assert.ok(stored, "the new secret is stored");
    assert.ok(stored.includes(`${SEAL_PREFIX}new:`), "the new secret is sealed under the new key");
    assert.equal(stored.includes(VALUE), false);

    // An api that has only the new key: the old secret is a 500 InternalError, the new one reads.
    const onlyNew = createRegistry({ store: stack.store, serviceCidr: "10.96.0.0/16", log: stack.registry.store.log, encryption: new SecretSealer([newKey]) });
    const gw = createGateway({ handlers: onlyNew, log: stack.registry.store.log, tokens: [TOKEN] });
    const { httpPort } = await gw.listen({ host: "127.0.0.1", httpPort: 0 });
    try {
      const get = async (name: string) => {
        const res = await fetch(`http://127.0.0.1:${httpPort}/api/v1/namespaces/default/secrets/${name}`, { headers: { authorization: `Bearer ${TOKEN}` } });
        return { status: res.status, body: (await res.json()) as Json };
      };
      const broken = await get("kept");
      assert.equal(broken.status, 500);
      assert.equal(broken.body["kind"], "Status");
      assert.equal(broken.body["reason"], "InternalError");
      assert.match(String(broken.body["message"]), /secrets\/default\/kept is encrypted with key "old", which is not among the api's encryption keys/);
      const fine = await get("fresh");
      assert.equal(fine.status, 200);
      assert.deepEqual(fine.body["data"], { [KEY_NAME]: b64 });
      // Other kinds are untouched.
      const ns = await fetch(`http://127.0.0.1:${httpPort}/api/v1/namespaces/default`, { headers: { authorization: `Bearer ${TOKEN}` } });
      assert.equal(ns.status, 200);
    } finally {
      await gw.close();
    }
    // The api still running with the old key alone cannot open the new secret, and keeps serving the old one.
    await assert.rejects(stack.client.get("secrets", "default", "fresh"), (err: Error) =>
      /InternalError|Internal error occurred/.test(`${(err as { status?: { reason?: string } }).status?.reason} ${err.message}`),
    );
    assert.ok(await stack.client.get("secrets", "default", "kept"));
  });
});
