// test-tier: servers
// gRPC conventions against a real api stack (nats-server, redis-server): a
// client built from server reflection alone lists and watches pods; the
// grpc.health.v1 service follows readiness and shutdown; deadlines end watches;
// errors carry google.rpc.Status details; TLS with client certificates or tokens.
import assert from "node:assert/strict";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";
import { after, before, describe, it } from "node:test";
import * as grpc from "@grpc/grpc-js";
import protobuf from "protobufjs";
import { ensureClientCa, signClientCert } from "@choreo/kit/secrets";
import { fromKubeJson } from "@choreo/kit/kube-json";
import { silentLogger } from "@choreo/kit/log";
import { waitFor } from "@choreo/kit/testing";
import { Status } from "@choreo/kit/gen/choreo/meta/v1/meta";
import { startStack, type Stack } from "../testing/stack.js";
import { ObjectCache } from "../storage/object-cache.js";
import { ensureServingCert } from "../http/index.js";
import { Readiness } from "../health/readiness.js";
import { GrpcTransport, STATUS_DETAILS_KEY, STATUS_METADATA_KEY, statusFromDetails } from "./serve-grpc.js";
import { reflect, type Reflected } from "./reflection-client.js";

// google.rpc.Status and Any, written here so the details are read independently of the server's encoder.
const rpc = protobuf.Root.fromJSON({
  nested: {
    google: {
      nested: {
        rpc: {
          nested: {
            Status: { fields: { code: { type: "int32", id: 1 }, message: { type: "string", id: 2 }, details: { rule: "repeated", type: "Any", id: 3 } } },
          },
        },
        protobuf: { nested: {} },
      },
    },
    Any: { fields: { type_url: { type: "string", id: 1 }, value: { type: "bytes", id: 2 } } },
  },
}).lookupType("google.rpc.Status");

type Unary = (req: object, md: grpc.Metadata, opts: grpc.CallOptions, cb: (err: grpc.ServiceError | null, res: unknown) => void) => void;
type Stub = grpc.Client & Record<string, Unary> & { watch(req: object, md: grpc.Metadata, opts?: grpc.CallOptions): grpc.ClientReadableStream<unknown> };
type StubClass = new (address: string, creds: grpc.ChannelCredentials) => Stub;

const pod = (name: string) =>
  fromKubeJson({ apiVersion: "v1", kind: "Pod", metadata: { name, namespace: "default" }, spec: { containers: [{ name: "c", image: "i" }] } });

function call<T>(stub: Stub, method: string, req: object, md = new grpc.Metadata(), opts: grpc.CallOptions = {}): Promise<T> {
  return new Promise((resolve, reject) => stub[method]!.call(stub, req, md, opts, (err, res) => (err ? reject(err) : resolve(res as T))));
}

function bearer(token: string): grpc.Metadata {
  const md = new grpc.Metadata();
  md.set("authorization", `Bearer ${token}`);
  return md;
}

describe("gRPC conventions: reflection, health, deadlines, error details, TLS", () => {
  let s: Stack;
  let dir: string;
  let ac: AbortController;
  let running: Promise<void>;
  let t: GrpcTransport;
  let address: string;
  let creds: grpc.ChannelCredentials;
  let reflected: Reflected;
  let healthy = true;
  const requests: string[] = [];
  const readiness = new Readiness().add("test", () => healthy);

  before(async () => {
    s = await startStack();
    dir = await mkdtemp(path.join(tmpdir(), "choreo-grpc-"));
    const serving = await ensureServingCert(dir);
    const clientCa = await ensureClientCa(path.join(dir, "pki"));
    ac = new AbortController();
    t = new GrpcTransport({
      handlers: s.registry,
      log: silentLogger(),
      host: "127.0.0.1",
      port: 0,
      tokens: ["secret"],
      tls: { cert: serving.cert, key: serving.key, clientCa: clientCa.pem },
      readiness,
      healthIntervalMs: 100,
      onRequest: (method, code) => requests.push(`${method} ${code}`),
    });
    running = t.start(ac.signal);
    address = `127.0.0.1:${await t.port()}`;
    // Token callers verify the server by its CA and send their token with every call.
    creds = grpc.credentials.combineChannelCredentials(
      grpc.credentials.createSsl(Buffer.from(serving.caPem)),
      grpc.credentials.createFromMetadataGenerator((_p, cb) => cb(null, bearer("secret"))),
    );
    // Reflection answers authenticated callers (as /openapi); grpcurl sends its -H headers on reflection too.
    reflected = await reflect(address, creds, ["choreo.api.v1.Api", "grpc.health.v1.Health"], {
      loader: { longs: Number, enums: String, defaults: true, oneofs: true },
    });
  });
  after(async () => {
    ac?.abort();
    await running;
    await s?.stop();
    if (dir) await rm(dir, { recursive: true, force: true });
  });

  const apiClass = (): StubClass => (reflected.grpc as unknown as { choreo: { api: { v1: { Api: StubClass } } } }).choreo.api.v1.Api;
  const healthClass = (): StubClass => (reflected.grpc as unknown as { grpc: { health: { v1: { Health: StubClass } } } }).grpc.health.v1.Health;

  it("reflection lists the services; a client built from it alone lists and watches pods", async () => {
    const anonymous = (await reflect(address, grpc.credentials.createSsl(Buffer.from((await ensureServingCert(dir)).caPem)), ["choreo.api.v1.Api"]).catch(
      (e: unknown) => e,
    )) as grpc.ServiceError;
    assert.equal(anonymous.code, grpc.status.UNAUTHENTICATED, "no reflection without credentials");
    assert.ok(reflected.services.includes("choreo.api.v1.Api"), reflected.services.join(","));
    assert.ok(reflected.services.includes("grpc.health.v1.Health"), reflected.services.join(","));
    const api = new (apiClass())(address, creds);
    try {
      await s.client.create(pod("r1"));
      const list = await call<{ items: { pod?: { metadata: { name: string } } }[]; metadata: { resource_version: string } }>(api, "list", {
        resource: "pods",
        namespace: "default",
      });
      assert.ok(
        list.items.some((o) => o.pod?.metadata.name === "r1"),
        JSON.stringify(list.items).slice(0, 300),
      );
      // Messages loaded from descriptors keep proto/'s field names (snake_case): proto-loader's keepCase applies to .proto files only.
      assert.match(list.metadata.resource_version, /^\d+$/);
      const watch = api.watch({ resource: "pods", namespace: "default", resource_version: list.metadata.resource_version }, new grpc.Metadata());
      const seen = new Promise<{ type: string; object: { pod?: { metadata: { name: string } } } }>((resolve, reject) => {
        watch.on("data", (ev: { type: string; object: { pod?: { metadata: { name: string } } } }) => {
          if (ev.object.pod?.metadata.name === "r2") resolve(ev);
        });
        watch.on("error", (err: grpc.ServiceError) => (err.code === grpc.status.CANCELLED ? undefined : reject(err)));
      });
      await s.client.create(pod("r2"));
      const ev = await seen;
      assert.equal(ev.type, "ADDED");
      watch.cancel();
    } finally {
      api.close();
    }
  });

  it("health: Check and Watch follow readiness; an unknown service is NOT_FOUND", async () => {
    const health = new (healthClass())(address, creds);
    try {
      await waitFor(async () => (await call<{ status: string }>(health, "Check", { service: "" })).status === "SERVING", { timeoutMs: 5_000 });
      assert.equal((await call<{ status: string }>(health, "Check", { service: "choreo.api.v1.Api" })).status, "SERVING");
      const unknown = await call(health, "Check", { service: "nope" }).catch((e: grpc.ServiceError) => e);
      assert.equal((unknown as grpc.ServiceError).code, grpc.status.NOT_FOUND);
      const statuses: string[] = [];
      const watch = health.watch({ service: "choreo.api.v1.Api" }, new grpc.Metadata());
      watch.on("data", (r: { status: string }) => statuses.push(r.status));
      watch.on("error", () => undefined);
      await waitFor(() => statuses.at(-1) === "SERVING", { timeoutMs: 5_000, message: "Watch starts with SERVING" });
      healthy = false;
      await waitFor(() => statuses.at(-1) === "NOT_SERVING", { timeoutMs: 5_000, message: "a failed readiness check is NOT_SERVING" });
      assert.equal((await call<{ status: string }>(health, "Check", { service: "" })).status, "NOT_SERVING");
      healthy = true;
      await waitFor(() => statuses.at(-1) === "SERVING", { timeoutMs: 5_000, message: "and SERVING again" });
      assert.deepEqual(statuses, ["SERVING", "NOT_SERVING", "SERVING"]);
      watch.cancel();
    } finally {
      health.close();
    }
  });

  it("health: NOT_SERVING as soon as shutdown begins; an open health Watch does not hold the shutdown", async () => {
    const stop = new AbortController();
    const other = new GrpcTransport({ handlers: s.registry, log: silentLogger(), host: "127.0.0.1", port: 0, healthIntervalMs: 100 });
    const done = other.start(stop.signal);
    const health = new (healthClass())(`127.0.0.1:${await other.port()}`, grpc.credentials.createInsecure());
    try {
      const statuses: string[] = [];
      const watch = health.watch({ service: "" }, new grpc.Metadata());
      watch.on("data", (r: { status: string }) => statuses.push(r.status));
      const ended = new Promise<grpc.ServiceError>((resolve) => watch.on("error", resolve));
      await waitFor(() => statuses.at(-1) === "SERVING", { timeoutMs: 5_000 });
      const stopping = Date.now();
      stop.abort();
      await waitFor(() => statuses.at(-1) === "NOT_SERVING", { timeoutMs: 5_000, message: "NOT_SERVING on shutdown" });
      await done;
      const took = Date.now() - stopping;
      assert.ok(took < 2_000, `stopped after ${took} ms with a health Watch open (the force is at 5 s)`);
      // The stream is cut (forceShutdown cancels it): the client then reconnects elsewhere.
      assert.ok([grpc.status.CANCELLED, grpc.status.UNAVAILABLE].includes((await ended).code));
    } finally {
      health.close();
      await done;
    }
  });

  it("a watch's deadline ends it: DEADLINE_EXCEEDED for the client, the server's watch stops", async () => {
    const api = new (apiClass())(address, creds);
    try {
      const before = t.watches;
      const started = Date.now();
      const watch = api.watch({ resource: "pods", namespace: "default" }, new grpc.Metadata(), { deadline: Date.now() + 800 });
      watch.on("data", () => undefined);
      await waitFor(() => t.watches === before + 1, { timeoutMs: 5_000, message: "the watch is served" });
      const err = await new Promise<grpc.ServiceError>((resolve) => watch.on("error", resolve));
      assert.equal(err.code, grpc.status.DEADLINE_EXCEEDED);
      await waitFor(() => t.watches === before, { timeoutMs: 2_000, message: "the server stopped the watch" });
      assert.ok(Date.now() - started < 3_000, `ended after ${Date.now() - started} ms`);
      // A unary call within its deadline is answered as usual.
      const got = await call<{ pod?: { metadata: { name: string } } }>(api, "get", { resource: "pods", namespace: "default", name: "r1" }, undefined, {
        deadline: Date.now() + 5_000,
      });
      assert.equal(got.pod?.metadata.name, "r1");
    } finally {
      api.close();
    }
  });

  it("a unary call's deadline stops its wait in the handler (the object cache reaching a revision), not after the cache's own 10 s", async () => {
    const cacheAc = new AbortController();
    const oc = new ObjectCache({ storage: s.store, watch: s.cache, log: silentLogger() });
    const cacheRunning = oc.start(cacheAc.signal);
    s.registry.store.objectCache = oc;
    s.registry.store.cacheWaitMs = 10_000;
    const api = new (apiClass())(address, creds);
    try {
      const rev = await s.store.currentRevision();
      await waitFor(() => oc.revision >= rev, { timeoutMs: 30_000, message: "the cache caught up" });
      const started = Date.now();
      const far = { resource: "pods", namespace: "default", name: "r1", resource_version: String(rev + 1_000) };
      const err = (await call(api, "get", far, undefined, { deadline: Date.now() + 400 }).catch((e: unknown) => e)) as grpc.ServiceError;
      assert.equal(err.code, grpc.status.DEADLINE_EXCEEDED);
      await waitFor(() => t.inFlight === 0, { timeoutMs: 3_000, message: "the handler gave up with its caller" });
      const took = Date.now() - started;
      assert.ok(took < 3_000, `handler ended ${took} ms after the call began (the cache waits 10 s)`);
    } finally {
      api.close();
      s.registry.store.cacheWaitMs = 3_000;
      s.registry.store.objectCache = undefined;
      cacheAc.abort();
      await cacheRunning;
    }
  });

  it("errors: the gRPC code, google.rpc.Status with Kubernetes' Status in an Any, and the old trailer", async () => {
    const api = new (apiClass())(address, creds);
    try {
      const err = (await call(api, "get", { resource: "pods", namespace: "default", name: "nope" }).catch((e: unknown) => e)) as grpc.ServiceError;
      assert.equal(err.code, grpc.status.NOT_FOUND);
      const raw = err.metadata.get(STATUS_DETAILS_KEY)[0] as Buffer;
      const rich = rpc.toObject(rpc.decode(raw), { bytes: Buffer }) as { code: number; message: string; details: { type_url: string; value: Buffer }[] };
      assert.equal(rich.code, grpc.status.NOT_FOUND);
      assert.equal(rich.message, 'pods "nope" not found');
      assert.equal(rich.details.length, 1);
      assert.equal(rich.details[0]!.type_url, "type.googleapis.com/choreo.meta.v1.Status");
      const status = Status.decode(rich.details[0]!.value);
      assert.equal(status.reason, "NotFound");
      assert.equal(status.code, 404);
      assert.equal(status.details?.name, "nope");
      assert.deepEqual(statusFromDetails(err.metadata), status);
      assert.deepEqual(Status.decode(err.metadata.get(STATUS_METADATA_KEY)[0] as Buffer), status);
      assert.ok(requests.includes("get 404"), `onRequest (the api's request histogram) told: ${requests.join(", ")}`);
      // An invalid object: INVALID_ARGUMENT with the causes.
      const bad = (await call(api, "create", { object: { pod: { metadata: { name: "Bad_Name", namespace: "default" } } } }).catch(
        (e: unknown) => e,
      )) as grpc.ServiceError;
      assert.equal(bad.code, grpc.status.INVALID_ARGUMENT);
      assert.equal(statusFromDetails(bad.metadata)?.reason, "Invalid");
    } finally {
      api.close();
    }
  });

  it("TLS: a client certificate of the client CA or a token; neither, or another CA's certificate, is UNAUTHENTICATED; plaintext is refused", async () => {
    const { caPem } = await ensureServingCert(dir);
    const carol = await signClientCert(path.join(dir, "pki"), "carol", ["system:masters"]);
    const byCert = new (apiClass())(address, grpc.credentials.createSsl(Buffer.from(caPem), Buffer.from(carol.key), Buffer.from(carol.cert)));
    const anonymous = new (apiClass())(address, grpc.credentials.createSsl(Buffer.from(caPem)));
    const plain = new (apiClass())(address, grpc.credentials.createInsecure());
    // A certificate another CA signed, claiming system:masters: ignored (the call has no user).
    await ensureClientCa(path.join(dir, "other-pki"));
    const mallory = await signClientCert(path.join(dir, "other-pki"), "mallory", ["system:masters"]);
    const forged = new (apiClass())(address, grpc.credentials.createSsl(Buffer.from(caPem), Buffer.from(mallory.key), Buffer.from(mallory.cert)));
    try {
      const ignored = (await call(forged, "list", { resource: "pods" }).catch((e: unknown) => e)) as grpc.ServiceError;
      assert.equal(ignored.code, grpc.status.UNAUTHENTICATED);
      const listed = await call<{ items: unknown[] }>(byCert, "list", { resource: "pods", namespace: "default" });
      assert.ok(listed.items.length >= 1);
      const none = (await call(anonymous, "list", { resource: "pods" }).catch((e: unknown) => e)) as grpc.ServiceError;
      assert.equal(none.code, grpc.status.UNAUTHENTICATED);
      const token = await call<{ items: unknown[] }>(anonymous, "list", { resource: "pods", namespace: "default" }, bearer("secret"));
      assert.ok(token.items.length >= 1);
      const refused = (await call(plain, "list", { resource: "pods" }, bearer("secret"), { deadline: Date.now() + 3_000 }).catch(
        (e: unknown) => e,
      )) as grpc.ServiceError;
      assert.ok([grpc.status.UNAVAILABLE, grpc.status.DEADLINE_EXCEEDED].includes(refused.code), `code ${refused.code}`);
    } finally {
      byCert.close();
      forged.close();
      anonymous.close();
      plain.close();
    }
  });
});
