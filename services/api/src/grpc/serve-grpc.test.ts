// test-tier: servers
import assert from "node:assert/strict";
import { after, before, describe, it } from "node:test";
import * as grpc from "@grpc/grpc-js";
import { ApiClient as GrpcClient, ListRequest, WatchRequest, type Object as ApiObject, type WatchEvent } from "@choreo/kit/gen/choreo/api/v1/api";
import { Status } from "@choreo/kit/gen/choreo/meta/v1/meta";
import { fromKubeJson } from "@choreo/kit/kube-json";
import { silentLogger } from "@choreo/kit/log";
import { waitFor } from "@choreo/kit/testing";
import { startStack, type Stack } from "../testing/stack.js";
import { ObjectCache } from "../storage/object-cache.js";
import { GrpcTransport, STATUS_METADATA_KEY } from "./serve-grpc.js";
import { Authenticator } from "../auth/authenticate.js";
import { AuthorizerChain } from "../auth/authorize.js";
import { parseTokenFile, StaticTokens } from "../auth/static-tokens.js";

describe("gRPC transport", () => {
  let s: Stack;
  let ac: AbortController;
  let running: Promise<void>;
  let client: InstanceType<typeof GrpcClient>;
  const md = (token = "secret") => {
    const m = new grpc.Metadata();
    m.set("authorization", `Bearer ${token}`);
    return m;
  };
  before(async () => {
    s = await startStack();
    ac = new AbortController();
    const t = new GrpcTransport({ handlers: s.registry, log: silentLogger(), host: "127.0.0.1", port: 0, tokens: ["secret"] });
    running = t.start(ac.signal);
    client = new GrpcClient(`127.0.0.1:${await t.port()}`, grpc.credentials.createInsecure());
  });
  after(async () => {
    client?.close();
    ac?.abort();
    await running;
    await s?.stop();
  });

  it("creates and gets; errors carry the Status", async () => {
    const obj = fromKubeJson({
      apiVersion: "v1",
      kind: "Pod",
      metadata: { name: "g1", namespace: "default" },
      spec: { containers: [{ name: "c", image: "i" }] },
    });
    const created = await new Promise<ApiObject>((res, rej) => client.create({ object: obj, dryRun: false }, md(), (e, r) => (e ? rej(e) : res(r))));
    assert.equal(created.kind?.value.metadata?.name, "g1");
    const err = await new Promise<grpc.ServiceError>((res) =>
      client.get({ resource: "pods", namespace: "default", name: "nope" }, md(), (e) => res(e as grpc.ServiceError)),
    );
    assert.equal(err.code, grpc.status.NOT_FOUND);
    const status = Status.decode(err.metadata.get(STATUS_METADATA_KEY)[0] as Buffer);
    assert.equal(status.reason, "NotFound");
    assert.equal(status.code, 404);
    const unauth = await new Promise<grpc.ServiceError>((res) =>
      client.get({ resource: "pods", namespace: "default", name: "g1" }, md("wrong"), (e) => res(e as grpc.ServiceError)),
    );
    assert.equal(unauth.code, grpc.status.UNAUTHENTICATED);
  });

  it("authorizes every call as its token's user: the apiserver's 403 as PERMISSION_DENIED, nothing stored", async () => {
    const tokens = new StaticTokens(parseTokenFile("admin-token\nbob-token,bob,b,viewers\n"));
    const t = new GrpcTransport({
      handlers: s.registry,
      log: silentLogger(),
      host: "127.0.0.1",
      port: 0,
      authentication: new Authenticator({ tokens: [tokens] }),
      authorizer: new AuthorizerChain([{ authorize: (a) => ({ allowed: a.user.groups.includes("viewers") && a.verb === "list", reason: "" }) }]),
    });
    const stop = new AbortController();
    const done = t.start(stop.signal);
    const c = new GrpcClient(`127.0.0.1:${await t.port()}`, grpc.credentials.createInsecure());
    try {
      const listed = await new Promise<unknown>((res, rej) =>
        c.list(ListRequest.fromPartial({ resource: "pods", namespace: "default" }), md("bob-token"), (e, r) => (e ? rej(e) : res(r))),
      );
      assert.ok(listed);
      const obj = fromKubeJson({
        apiVersion: "v1",
        kind: "Pod",
        metadata: { name: "bobs", namespace: "default" },
        spec: { containers: [{ name: "c", image: "i" }] },
      });
      const err = await new Promise<grpc.ServiceError>((res) => c.create({ object: obj, dryRun: false }, md("bob-token"), (e) => res(e as grpc.ServiceError)));
      assert.equal(err.code, grpc.status.PERMISSION_DENIED);
      const status = Status.decode(err.metadata.get(STATUS_METADATA_KEY)[0] as Buffer);
      assert.equal(status.message, 'pods is forbidden: User "bob" cannot create resource "pods" in API group "" in the namespace "default"');
      const watch = c.watch(WatchRequest.fromPartial({ resource: "nodes" }), md("bob-token"));
      watch.on("data", () => undefined); // flowing: the status arrives after the (empty) stream
      const denied = await new Promise<grpc.ServiceError>((res) => watch.on("error", (e) => res(e as grpc.ServiceError)));
      assert.equal(denied.code, grpc.status.PERMISSION_DENIED);
      const anonymous = await new Promise<grpc.ServiceError>((res) =>
        c.list(ListRequest.fromPartial({ resource: "pods" }), new grpc.Metadata(), (e) => res(e as grpc.ServiceError)),
      );
      assert.equal(anonymous.code, grpc.status.UNAUTHENTICATED);
      const stored = await new Promise<grpc.ServiceError>((res) =>
        c.get({ resource: "pods", namespace: "default", name: "bobs" }, md("admin-token"), (e) => res(e as grpc.ServiceError)),
      );
      assert.equal(stored.code, grpc.status.NOT_FOUND, "nothing stored");
    } finally {
      c.close();
      stop.abort();
      await done;
    }
  });

  it("streams a watch: synthetic ADDED, then live changes", async () => {
    const call = client.watch(
      {
        resource: "pods",
        namespace: "default",
        labelSelector: "",
        fieldSelector: "metadata.name=g2",
        resourceVersion: "0",
        timeoutSeconds: 0,
        allowBookmarks: false,
      },
      md(),
    );
    const events: WatchEvent[] = [];
    const done = new Promise<void>((resolve) => {
      call.on("data", (ev: WatchEvent) => {
        events.push(ev);
        if (events.length === 2) resolve();
      });
    });
    call.on("error", () => undefined);
    await s.client.create(
      fromKubeJson({ apiVersion: "v1", kind: "Pod", metadata: { name: "g2", namespace: "default" }, spec: { containers: [{ name: "c", image: "i" }] } }),
    );
    await s.client.delete("pods", "default", "g2");
    await done;
    call.cancel();
    assert.deepEqual(
      events.map((e) => e.type),
      ["ADDED", "DELETED"],
    );
  });

  it("get and list pass resourceVersion and resourceVersionMatch: answered by the object cache", async () => {
    const cacheAc = new AbortController();
    const oc = new ObjectCache({ storage: s.store, watch: s.cache, log: silentLogger() });
    const cacheRunning = oc.start(cacheAc.signal);
    s.registry.store.objectCache = oc;
    try {
      const obj = fromKubeJson({
        apiVersion: "v1",
        kind: "Pod",
        metadata: { name: "g-cache", namespace: "default" },
        spec: { containers: [{ name: "c", image: "i" }] },
      });
      await new Promise<ApiObject>((res, rej) => client.create({ object: obj, dryRun: false }, md(), (e, r) => (e ? rej(e) : res(r))));
      const rev = await s.store.currentRevision();
      await waitFor(() => oc.revision >= rev, { timeoutMs: 30_000, message: "the cache caught up" });
      const got = await new Promise<ApiObject>((res, rej) =>
        client.get({ resource: "pods", namespace: "default", name: "g-cache", resourceVersion: "0" }, md(), (e, r) => (e ? rej(e) : res(r))),
      );
      assert.equal(got.kind?.value.metadata?.name, "g-cache");
      // Only the cache answers a revision it has not reached with 504 (the store would answer the pod).
      s.registry.store.cacheWaitMs = 100;
      const far = await new Promise<grpc.ServiceError>((res) =>
        client.get({ resource: "pods", namespace: "default", name: "g-cache", resourceVersion: String(rev + 1_000) }, md(), (e) => res(e as grpc.ServiceError)),
      );
      assert.equal(Status.decode(far.metadata.get(STATUS_METADATA_KEY)[0] as Buffer).code, 504);
      const bad = await new Promise<grpc.ServiceError>((res) =>
        client.list(ListRequest.fromPartial({ resource: "pods", resourceVersionMatch: "Exact" }), md(), (e) => res(e as grpc.ServiceError)),
      );
      assert.equal(Status.decode(bad.metadata.get(STATUS_METADATA_KEY)[0] as Buffer).code, 422);
    } finally {
      s.registry.store.cacheWaitMs = 3_000;
      s.registry.store.objectCache = undefined;
      cacheAc.abort();
      await cacheRunning;
    }
  });
});
