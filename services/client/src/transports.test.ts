// test-tier: servers
// ChoreoClient over its three transports against a real api process (with
// nats-server and redis-server): the same suite over NATS, the HTTPS gateway
// (connected from a kubeconfig as `choreo up` writes it) and gRPC over TLS —
// CRUD, a label-selected list, a stale update → Conflict, a missing object →
// NotFound, watch ADDED/MODIFIED/DELETED, a bad object → 422 Invalid and
// nothing stored, a revision the log no longer holds → 410 Expired; a wrong
// token → 401 and a user without rights → 403 on each, a client certificate
// over http and grpc.
import assert from "node:assert/strict";
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { after, before, describe, it } from "node:test";
import { ApiError, emptyMeta, isAlreadyExists, isConflict, isExpired, isNotFound } from "@choreo/kit";
import { ApiClient } from "@choreo/kit/client";
import { jetstreamManager } from "@nats-io/jetstream";
import type { NatsConnection } from "@nats-io/transport-node";
import { connectBus, streamState } from "@choreo/kit/bus";
import { ensureTokenFile, provisionIdentity, signClientCert } from "@choreo/kit/secrets";
import { freePort, startNats, startProcess, startRedis, waitFor, type ManagedProcess, type ServerHandle } from "@choreo/kit/testing";
import type { ConfigMap } from "@choreo/kit/gen/choreo/core/v1/core";
import { ChoreoClient, connectClient, type ConnectOptions } from "./client.js";
import type { ChangeEvent } from "./subscribe.js";
import type { GrpcTransport } from "./grpc-transport.js";
import { HttpTransport } from "./http-transport.js";
import type { TransportName } from "./transport.js";

/** The transports, http twice: Kubernetes JSON and Kubernetes protobuf. */
const VARIANTS = ["nats", "http", "http-protobuf", "grpc"] as const;
type Variant = (typeof VARIANTS)[number];
const transportOf: Record<Variant, TransportName> = { nats: "nats", http: "http", "http-protobuf": "http", grpc: "grpc" };

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "../../..");
/** The event log's retention: small, so that a revision falls out of it after RETENTION writes. */
const RETENTION = 100;

const configMap = (name: string, labels: Record<string, string> = {}, data: Record<string, string> = { k: "v" }): ConfigMap => ({
  apiVersion: "v1",
  kind: "ConfigMap",
  metadata: emptyMeta({ name, namespace: "default", labels }),
  data,
  binaryData: {},
  immutable: undefined,
});

/** A kubeconfig in the form `choreo up` writes (services/cli/src/kubeconfig.ts renderKubeconfig). */
function kubeconfig(server: string, caPem: string, auth: Record<string, string>): string {
  return [
    "apiVersion: v1",
    "kind: Config",
    "clusters:",
    "- name: choreo",
    "  cluster:",
    `    server: ${server}`,
    `    certificate-authority-data: ${Buffer.from(caPem).toString("base64")}`,
    "users:",
    "- name: admin",
    "  user:",
    ...Object.entries(auth).map(([k, v]) => `    ${k}: ${v}`),
    "contexts:",
    "- name: choreo",
    "  context:",
    "    cluster: choreo",
    "    user: admin",
    "    namespace: default",
    "current-context: choreo",
    "",
  ].join("\n");
}

/** The next `n` events of a watch. */
async function take(it: AsyncIterator<ChangeEvent>, n: number): Promise<ChangeEvent[]> {
  const out: ChangeEvent[] = [];
  while (out.length < n) {
    const r = await it.next();
    if (r.done) break;
    out.push(r.value);
  }
  return out;
}

/** The ApiError a promise rejects with. */
async function apiError(p: Promise<unknown>): Promise<ApiError> {
  try {
    await p;
  } catch (err) {
    assert.ok(err instanceof ApiError, `an ApiError, got ${String(err)}`);
    return err;
  }
  assert.fail("expected a failure");
}

describe("ChoreoClient over nats, http and grpc against a real api", () => {
  let dir: string;
  let nats: ServerHandle;
  let redis: ServerHandle;
  let api: ManagedProcess;
  let admin: ApiClient;
  let adminNc: NatsConnection;
  let closeAdmin: () => Promise<void>;
  let token: string;
  let nobodyToken: string;
  let caPem: string;
  const ports = { http: 0, https: 0, grpc: 0, metrics: 0 };
  /** How each transport connects, for a given token (undefined: the admin's). */
  const connect: Record<Variant, (tok?: string) => ConnectOptions> = {
    nats: (tok) => ({ url: nats.url, token: tok ?? token }),
    // From a kubeconfig: its server, CA and token.
    http: (tok) => ({ kubeconfig: kubeconfigFile(tok ?? token) }),
    // The same, with Kubernetes protobuf bodies and watch frames.
    "http-protobuf": (tok) => ({ kubeconfig: kubeconfigFile(tok ?? token), encoding: "protobuf" }),
    // The gRPC port's url; the CA and token from the same kubeconfig.
    grpc: (tok) => ({ url: `grpcs://127.0.0.1:${ports.grpc}`, kubeconfig: kubeconfigFile(tok ?? token) }),
  };
  let files = 0;
  const kubeconfigFile = (tok: string): string => {
    const f = path.join(dir, `kubeconfig-${files++}`);
    writeFileSync(f, kubeconfig(`https://127.0.0.1:${ports.https}`, caPem, { token: tok }), { mode: 0o600 });
    return f;
  };

  before(async () => {
    dir = mkdtempSync(path.join(os.tmpdir(), "choreo-client-"));
    [nats, redis] = await Promise.all([startNats({ dir: path.join(dir, "nats") }), startRedis({ dir: path.join(dir, "redis") })]);
    const tokens = path.join(dir, "api", "tokens");
    token = ensureTokenFile(tokens);
    // A user the api knows and RBAC binds to nothing: 403 on everything.
    nobodyToken = provisionIdentity(tokens, path.join(dir, "nobody.token"), { user: "nobody", groups: [] });
    for (const k of Object.keys(ports) as (keyof typeof ports)[]) ports[k] = await freePort();
    const nc = await connectBus(nats.url, "client-test");
    adminNc = nc;
    closeAdmin = () => nc.close();
    admin = new ApiClient(nc, { token, timeoutMs: 2_000 });
    api = await startProcess({
      name: "api",
      cmd: process.execPath,
      args: ["--import", "tsx", path.join(ROOT, "services/api/src/main.ts")],
      cwd: ROOT,
      env: {
        ...process.env,
        CHOREO_NATS_URL: nats.url,
        CHOREO_REDIS_URL: redis.url,
        CHOREO_DATA_DIR: path.join(dir, "api"),
        CHOREO_API_HTTP_PORT: String(ports.http),
        CHOREO_API_HTTPS_PORT: String(ports.https),
        CHOREO_API_GRPC_PORT: String(ports.grpc),
        CHOREO_API_METRICS_PORT: String(ports.metrics),
        CHOREO_EVENT_RETENTION: String(RETENTION),
        CHOREO_SERVICE_ACCOUNT_ADMISSION: "0",
        CHOREO_LOG_LEVEL: "warn",
      },
      readyCheck: async () => {
        try {
          await admin.get("namespaces", "", "default");
          return (await fetch(`http://127.0.0.1:${ports.http}/readyz`)).ok;
        } catch {
          return false;
        }
      },
      timeoutMs: 60_000,
      logFile: path.join(dir, "api.log"),
    });
    caPem = readFileSync(path.join(dir, "api", "pki", "apiserver.crt"), "utf8");
    // What the api writes by itself once up (kube-root-ca.crt in default): settled before the tests count objects.
    await waitFor(
      async () => {
        try {
          await admin.get("configmaps", "default", "kube-root-ca.crt");
          return true;
        } catch {
          return false;
        }
      },
      { timeoutMs: 30_000, message: "kube-root-ca.crt in default" },
    );
  });

  after(async () => {
    await api?.stop(10_000);
    await closeAdmin?.();
    await Promise.all([nats?.stop(), redis?.stop()]);
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  for (const t of VARIANTS) {
    describe(`over ${t}`, () => {
      let client: ChoreoClient;
      before(async () => {
        client = await connectClient(connect[t]());
        assert.equal(client.transport.name, transportOf[t]);
      });
      after(async () => {
        await client?.close();
      });

      it("creates, gets, lists by label, updates (a stale resourceVersion → Conflict), deletes (then NotFound)", async () => {
        const a = await client.create("configMap", configMap(`${t}-a`, { transport: t, app: "crud" }, { x: "1" }));
        assert.equal(a.metadata?.name, `${t}-a`);
        assert.ok(Number(a.metadata?.resourceVersion) > 0);
        assert.ok(a.metadata?.uid);
        await client.create("configMap", configMap(`${t}-b`, { transport: t, app: "other" }));
        assert.ok(isAlreadyExists(await apiError(client.create("configMap", configMap(`${t}-a`)))));

        const got = await client.typed("configMap").get("default", `${t}-a`);
        assert.deepEqual(got.data, { x: "1" });
        assert.equal(got.metadata?.resourceVersion, a.metadata?.resourceVersion);
        assert.deepEqual((await client.get("configmaps", "default", `${t}-a`)).metadata?.labels, { transport: t, app: "crud" });

        const listed = await client.list("configmaps", { namespace: "default", labelSelector: `transport=${t},app=crud` });
        assert.deepEqual(
          listed.items.map((i) => i.metadata?.name),
          [`${t}-a`],
        );
        assert.ok(Number(listed.resourceVersion) >= Number(a.metadata?.resourceVersion));
        const typedList = await client.typed("configMap").list({ namespace: "default", labelSelector: `transport=${t}` });
        assert.deepEqual(typedList.items.map((i) => i.metadata?.name).sort(), [`${t}-a`, `${t}-b`]);

        const updated = await client.update("configMap", { ...got, data: { x: "2" } });
        assert.deepEqual(updated.data, { x: "2" });
        assert.ok(Number(updated.metadata?.resourceVersion) > Number(got.metadata?.resourceVersion));
        // got's resourceVersion is no longer the stored one.
        const stale = await apiError(client.update("configMap", { ...got, data: { x: "3" } }));
        assert.ok(isConflict(stale), stale.message);
        assert.equal(stale.code, 409);
        assert.deepEqual((await client.typed("configMap").get("default", `${t}-a`)).data, { x: "2" });

        const missing = await apiError(client.get("configmaps", "default", `${t}-none`));
        assert.ok(isNotFound(missing));
        assert.equal(missing.code, 404);

        const deleted = await client.delete("configmaps", "default", `${t}-a`);
        assert.equal(deleted.metadata?.name, `${t}-a`);
        await client.typed("configMap").delete("default", `${t}-b`);
        assert.ok(isNotFound(await apiError(client.get("configmaps", "default", `${t}-a`))));
        assert.ok(isNotFound(await apiError(client.delete("configmaps", "default", `${t}-a`))));
        assert.deepEqual((await client.list("configmaps", { namespace: "default", labelSelector: `transport=${t}` })).items, []);
        if (client.transport instanceof HttpTransport) {
          // Objects, lists and Status errors came in the encoding asked for.
          const { json, protobuf } = client.transport.received;
          assert.deepEqual(t === "http-protobuf" ? [json, protobuf > 10] : [json > 10, protobuf], t === "http-protobuf" ? [0, true] : [true, 0]);
        }
      });

      it("watch: the listed objects as ADDED, then ADDED, MODIFIED, DELETED of the selected ones", async () => {
        const sel = { app: `watch-${t}` };
        await client.create("configMap", configMap(`${t}-w0`, sel));
        const ac = new AbortController();
        const w = client.watch("configmaps", { namespace: "default", labelSelector: `app=watch-${t}`, signal: ac.signal })[Symbol.asyncIterator]();
        try {
          const [first] = await take(w, 1);
          assert.deepEqual([first?.type, first?.object.metadata?.name, first?.kind.kind], ["ADDED", `${t}-w0`, "ConfigMap"]);
          // Not selected: never seen.
          await client.create("configMap", configMap(`${t}-unselected`, { app: "other" }));
          const w1 = await client.create("configMap", configMap(`${t}-w1`, sel));
          await client.update("configMap", { ...w1, data: { k: "changed" } });
          await client.delete("configmaps", "default", `${t}-w1`);
          const evs = await take(w, 3);
          assert.deepEqual(
            evs.map((e) => [e.type, e.object.metadata?.name]),
            [
              ["ADDED", `${t}-w1`],
              ["MODIFIED", `${t}-w1`],
              ["DELETED", `${t}-w1`],
            ],
          );
          assert.deepEqual((evs[1]?.object as ConfigMap).data, { k: "changed" });
          const revs = evs.map((e) => e.revision);
          assert.ok(revs[0]! > first!.revision && revs[0]! < revs[1]! && revs[1]! < revs[2]!, `revisions in order: ${revs.join(",")}`);
          assert.equal(String(revs[1]), evs[1]?.object.metadata?.resourceVersion);
        } finally {
          ac.abort();
          await w.return?.(undefined);
        }
        await client.delete("configmaps", "default", `${t}-w0`);
        await client.delete("configmaps", "default", `${t}-unselected`);
      });

      it("a bad object: a Kubernetes Status (422 Invalid, its causes) and nothing stored", async () => {
        const before = await client.list("configmaps", { namespace: "default" });
        const err = await apiError(client.create("configMap", configMap(`Bad_Name-${t}`)));
        assert.equal(err.code, 422);
        assert.equal(err.reason, "Invalid");
        assert.match(err.message, /Bad_Name/);
        assert.ok((err.status.details?.causes.length ?? 0) > 0, "the Status names its causes");
        assert.ok(isNotFound(await apiError(client.get("configmaps", "default", `Bad_Name-${t}`))));
        const afterList = await client.list("configmaps", { namespace: "default" });
        assert.equal(afterList.resourceVersion, before.resourceVersion, "no write happened");
        // Of a kind with no such resource: refused before anything is sent.
        assert.ok(isNotFound(await apiError(client.get("nosuchthings", "default", "x"))));
      });

      it("watch from a revision the event log no longer holds → 410 Expired", async () => {
        const old = (await client.list("configmaps", { namespace: "default" })).resourceVersion;
        const churn = configMap(`${t}-churn`);
        let cur = await client.create("configMap", churn);
        for (let i = 0; i < RETENTION + 10; i++) cur = await client.update("configMap", { ...cur, data: { i: String(i) } });
        await client.delete("configmaps", "default", `${t}-churn`);
        // The relay publishes after the write is answered: wait until the log has the last change (and so dropped `old`),
        // and until the api's object cache has it (a list not older than it waits for that).
        const latest = (await client.list("configmaps", { namespace: "default" })).resourceVersion;
        const jsm = await jetstreamManager(adminNc);
        await waitFor(
          async () => {
            const s = await streamState(jsm);
            return s.lastRevision >= Number(latest) && s.firstRevision > Number(old) + 1;
          },
          { timeoutMs: 30_000, message: `the event log past revision ${latest}` },
        );
        await client.list("configmaps", { namespace: "default", resourceVersion: latest });
        const ac = new AbortController();
        const w = client.transport.watchFrom("configmaps", { namespace: "default", resourceVersion: old, signal: ac.signal });
        try {
          const err = await apiError(w.next());
          assert.ok(isExpired(err), `${err.code} ${err.reason} ${err.message}`);
          assert.equal(err.code, 410);
        } finally {
          ac.abort();
          await w.return(undefined);
        }
      });

      it("a wrong token → 401 Unauthorized; a user without rights → 403 Forbidden, nothing created", async () => {
        await using stranger = await connectClient(connect[t]("not-a-token"));
        const unauth = await apiError(stranger.get("configmaps", "default", "kube-root-ca.crt"));
        assert.equal(unauth.code, 401);
        assert.equal(unauth.reason, "Unauthorized");

        // No token at all (and no certificate): 401 too.
        await using anonymous = await connectClient(connect[t](""));
        const anon = await apiError(anonymous.list("configmaps", { namespace: "default" }));
        assert.equal(anon.code, 401);
        assert.equal(anon.reason, "Unauthorized");

        await using nobody = await connectClient(connect[t](nobodyToken));
        const denied = await apiError(nobody.create("configMap", configMap(`${t}-denied`)));
        assert.equal(denied.code, 403);
        assert.equal(denied.reason, "Forbidden");
        assert.match(denied.message, /nobody/);
        assert.equal((await apiError(nobody.list("configmaps", { namespace: "default" }))).code, 403);
        const watchDenied = nobody.watch("configmaps", { namespace: "default" });
        assert.equal((await apiError(watchDenied.next())).code, 403);
        assert.ok(isNotFound(await apiError(client.get("configmaps", "default", `${t}-denied`))));
      });
    });
  }

  for (const t of ["http", "http-protobuf", "grpc"] as const) {
    it(`over ${t}, a watch stream the server ends (timeoutSeconds) is made again from the last revision: nothing lost or repeated`, async () => {
      await using c = await connectClient(connect[t]());
      const tr = c.transport as HttpTransport | GrpcTransport;
      const sel = { app: `rewatch-${t}` };
      const from = (await c.list("configmaps", { namespace: "default" })).resourceVersion;
      const ac = new AbortController();
      const w = tr.watchFrom("configmaps", {
        namespace: "default",
        labelSelector: `app=rewatch-${t}`,
        resourceVersion: from,
        timeoutSeconds: 1,
        signal: ac.signal,
      });
      try {
        const names: string[] = [];
        for (let i = 1; i <= 3; i++) {
          const started = tr.watchesStarted;
          const next = w.next();
          if (i > 1) await waitFor(() => tr.watchesStarted > started, { timeoutMs: 15_000, message: "the ended stream watched again" });
          await c.create("configMap", configMap(`${t}-rw${i}`, sel));
          const r = await next;
          assert.ok(!r.done);
          names.push(`${r.value.type} ${r.value.object.metadata?.name}`);
        }
        assert.deepEqual(names, [`ADDED ${t}-rw1`, `ADDED ${t}-rw2`, `ADDED ${t}-rw3`]);
        assert.ok(tr.watchesStarted >= 3);
      } finally {
        ac.abort();
        await w.return(undefined);
      }
      for (let i = 1; i <= 3; i++) await c.delete("configmaps", "default", `${t}-rw${i}`);
    });
  }

  for (const t of ["http", "grpc"] as const) {
    it(`a client certificate instead of a token over ${t} (the user its CN, groups its O)`, async () => {
      const admin = await signClientCert(path.join(dir, "api", "pki"), `cert-admin-${t}`, ["system:masters"]);
      const nobody = await signClientCert(path.join(dir, "api", "pki"), `cert-nobody-${t}`, []);
      const opts = (c: { cert: string; key: string }): ConnectOptions =>
        t === "http" ? { url: `https://127.0.0.1:${ports.https}`, ca: caPem, ...c } : { url: `grpcs://127.0.0.1:${ports.grpc}`, ca: caPem, ...c };
      await using asAdmin = await connectClient(opts(admin));
      const made = await asAdmin.create("configMap", configMap(`${t}-by-cert`));
      assert.equal(made.metadata?.name, `${t}-by-cert`);
      await asAdmin.delete("configmaps", "default", `${t}-by-cert`);
      await using asNobody = await connectClient(opts(nobody));
      const denied = await apiError(asNobody.get("configmaps", "default", "kube-root-ca.crt"));
      assert.equal(denied.code, 403);
      assert.match(denied.message, new RegExp(`cert-nobody-${t}`));
    });
  }

  it("the server's certificate is checked: another CA → refused (503), nothing sent", async () => {
    const otherCa = readFileSync(path.join(dir, "api", "pki", "client-ca.crt"), "utf8");
    await using h = await connectClient({ url: `https://127.0.0.1:${ports.https}`, ca: otherCa, token });
    const e1 = await apiError(h.get("configmaps", "default", "kube-root-ca.crt"));
    assert.equal(e1.code, 503);
    assert.match(e1.message, /certificate/i);
    await using g = await connectClient({ url: `grpcs://127.0.0.1:${ports.grpc}`, ca: otherCa, token, timeoutMs: 3_000 });
    const e2 = await apiError(g.get("configmaps", "default", "kube-root-ca.crt"));
    assert.ok(e2.code === 503 || e2.code === 504, `${e2.code} ${e2.message}`);
  });

  it("the url's scheme picks the transport; subscribe() is NATS only", async () => {
    await using h = await connectClient({ url: `https://127.0.0.1:${ports.https}`, ca: caPem, token });
    assert.equal(h.transport.name, "http");
    assert.throws(() => h.subscribe({ resource: "pods" }), /NATS/);
    assert.equal(h.api, undefined);
    await assert.rejects(connectClient({ url: "ftp://x:1" }), /unknown scheme/);
    await assert.rejects(connectClient({ transport: "nats", url: "https://127.0.0.1:1" }), /not a nats url/);
    await assert.rejects(connectClient({ transport: "grpc", kubeconfig: kubeconfigFile(token) }), /grpcs:\/\/host:port/);
  });
});
