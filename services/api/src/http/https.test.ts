import assert from "node:assert/strict";
import { mkdtempSync, rmSync, statSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { after, before, describe, it } from "node:test";
import { silentLogger } from "@choreo/kit/log";
import { createGateway, type Gateway } from "./gateway.js";
import { call, pod } from "./testing/harness.js";
import { MemoryHandlers } from "./testing/memory-handlers.js";
import { ensureServingCert, type ServingCert } from "./tls.js";

describe("https and bearer tokens", () => {
  let dir: string;
  let cert: ServingCert;
  let gateway: Gateway;
  let https: string;
  let httpBase: string;
  const TOKEN = "s3cret-token";

  before(async () => {
    dir = mkdtempSync(path.join(tmpdir(), "choreo-http-"));
    cert = await ensureServingCert(dir, ["api.choreo.test"]);
    gateway = createGateway({ handlers: new MemoryHandlers(), log: silentLogger(), tokens: [TOKEN, "other"], allowAnonymousHttp: true });
    const ports = await gateway.listen({ host: "127.0.0.1", httpPort: 0, httpsPort: 0, tls: { cert: cert.cert, key: cert.key } });
    https = `https://127.0.0.1:${ports.httpsPort}`;
    httpBase = `http://127.0.0.1:${ports.httpPort}`;
  });
  after(async () => {
    await gateway.close();
    rmSync(dir, { recursive: true, force: true });
  });

  it("creates the certificate once and reuses it", async () => {
    assert.equal(cert.certFile, path.join(dir, "pki", "apiserver.crt"));
    assert.equal(cert.caPem, cert.cert);
    assert.match(cert.cert, /BEGIN CERTIFICATE/);
    assert.equal(statSync(cert.keyFile).mode & 0o777, 0o600);
    const again = await ensureServingCert(dir, ["api.choreo.test"]);
    assert.equal(again.cert, cert.cert);
    assert.equal(again.key, cert.key);
  });

  it("serves https verified by the CA, with a token", async () => {
    const r = await call(https, "GET", "/api/v1/namespaces/default/pods", { ca: cert.caPem, token: TOKEN });
    assert.equal(r.status, 200, r.text);
    assert.equal(r.json["kind"], "PodList");
    const c = await call(https, "POST", "/api/v1/namespaces/default/pods", { ca: cert.caPem, token: "other", body: pod("x") });
    assert.equal(c.status, 201, c.text);
    const viaName = await call(https.replace("127.0.0.1", "localhost"), "GET", "/api", { ca: cert.caPem, token: TOKEN });
    assert.equal(viaName.status, 200, "SAN localhost");
  });

  it("refuses a missing or wrong token with 401 Unauthorized", async () => {
    for (const token of [undefined, "wrong", `${TOKEN}x`]) {
      const r = await call(https, "GET", "/api/v1/namespaces/default/pods", { ca: cert.caPem, ...(token ? { token } : {}) });
      assert.equal(r.status, 401, String(token));
      assert.equal(r.headers["content-type"], "application/json");
      assert.deepEqual(r.json, {
        kind: "Status",
        apiVersion: "v1",
        metadata: {},
        status: "Failure",
        message: "Unauthorized",
        reason: "Unauthorized",
        code: 401,
      });
    }
    const discovery = await call(https, "GET", "/api", { ca: cert.caPem });
    assert.equal(discovery.status, 401, "discovery needs the token too");
    const basic = await call(https, "GET", "/api", { ca: cert.caPem, headers: { Authorization: "Basic dXNlcjpwYXNz" } });
    assert.equal(basic.status, 401);
  });

  it("keeps health and version open", async () => {
    for (const p of ["/healthz", "/readyz", "/livez", "/version"]) {
      assert.equal((await call(https, "GET", p, { ca: cert.caPem })).status, 200, p);
    }
  });

  it("accepts anonymous plain http when allowed, but not a wrong token", async () => {
    assert.equal((await call(httpBase, "GET", "/api/v1/namespaces/default/pods")).status, 200);
    assert.equal((await call(httpBase, "GET", "/api/v1/namespaces/default/pods", { token: "wrong" })).status, 401);
    assert.equal((await call(httpBase, "GET", "/api/v1/namespaces/default/pods", { token: TOKEN })).status, 200);
  });

  it("refuses anonymous plain http unless allowed", async () => {
    const g = createGateway({ handlers: new MemoryHandlers(), log: silentLogger(), tokens: [TOKEN] });
    const { httpPort } = await g.listen({ host: "127.0.0.1", httpPort: 0 });
    try {
      const base = `http://127.0.0.1:${httpPort}`;
      assert.equal((await call(base, "GET", "/api")).status, 401);
      assert.equal((await call(base, "GET", "/api", { token: TOKEN })).status, 200);
      assert.equal((await call(base, "GET", "/healthz")).status, 200);
    } finally {
      await g.close();
    }
  });
});
