// The audit log on the HTTP gateway's door: one line per request with who,
// what, the decision and the code; 401s and 403s too; health paths not;
// a Secret's body never, a pod's at the Request level.
import assert from "node:assert/strict";
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { after, before, describe, it } from "node:test";
import { silentLogger } from "@choreo/kit/log";
import { Authenticator } from "../auth/authenticate.js";
import { AuthorizerChain } from "../auth/authorize.js";
import { parseTokenFile, StaticTokens } from "../auth/static-tokens.js";
import { createGateway, type Gateway } from "../http/gateway.js";
import { call, pod } from "../http/testing/harness.js";
import { MemoryHandlers } from "../http/testing/memory-handlers.js";
import { openAuditLog, type AuditLog } from "./index.js";

describe("audit log on the gateway", () => {
  let dir: string;
  let audit: AuditLog;
  let gateway: Gateway;
  let base: string;

  before(async () => {
    dir = mkdtempSync(path.join(tmpdir(), "choreo-audit-doors-"));
    const policyFile = path.join(dir, "policy.yaml");
    writeFileSync(
      policyFile,
      [
        "apiVersion: audit.k8s.io/v1",
        "kind: Policy",
        "rules:",
        "- level: None",
        '  nonResourceURLs: ["/healthz*"]',
        "- level: Request",
        '  resources: [{group: "", resources: ["pods", "secrets"]}]',
        "- level: Metadata",
        "",
      ].join("\n"),
    );
    audit = await openAuditLog({
      file: path.join(dir, "audit.log"),
      log: silentLogger(),
      policy: policyFile,
    });
    const tokens = new StaticTokens(parseTokenFile("admin-token\nbob-token,bob,b-1,viewers\n"));
    gateway = createGateway({
      handlers: new MemoryHandlers(),
      log: silentLogger(),
      authentication: new Authenticator({ tokens: [tokens] }),
      authorizer: new AuthorizerChain([{ authorize: (a) => ({ allowed: a.user.name === "bob" && a.verb === "list", reason: "" }) }]),
      audit,
    });
    const ports = await gateway.listen({ host: "127.0.0.1", httpPort: 0 });
    base = `http://127.0.0.1:${ports.httpPort}`;
  });
  after(async () => {
    await gateway.close();
    rmSync(dir, { recursive: true, force: true });
  });

  it("writes who did what with which answer, for allowed, forbidden and unauthenticated requests", async () => {
    {
      const r = await call(base, "POST", "/api/v1/namespaces/default/pods", { token: "admin-token", body: pod("web") });
      assert.equal(r.status, 201, r.text);
    }
    const secret = { apiVersion: "v1", kind: "Secret", metadata: { name: "db" }, stringData: { password: "hunter2" } };
    assert.equal((await call(base, "POST", "/api/v1/namespaces/default/secrets", { token: "admin-token", body: secret })).status, 201);
    assert.equal((await call(base, "GET", "/api/v1/namespaces/default/pods", { token: "bob-token" })).status, 200);
    assert.equal((await call(base, "DELETE", "/api/v1/namespaces/default/pods/web", { token: "bob-token" })).status, 403);
    assert.equal((await call(base, "GET", "/api/v1/nodes", { token: "wrong" })).status, 401);
    assert.equal((await call(base, "GET", "/healthz")).status, 200);
    await audit.close();
    const lines = readFileSync(path.join(dir, "audit.log"), "utf8").trim().split("\n");
    const events = lines.map((l) => JSON.parse(l) as Record<string, unknown> & { user: { username: string }; responseStatus: { code: number } });
    assert.deepEqual(
      events.map((e) => [e["verb"], e.user.username, e.responseStatus.code, (e["objectRef"] as { resource?: string } | undefined)?.resource ?? ""]),
      [
        ["create", "admin", 201, "pods"],
        ["create", "admin", 201, "secrets"],
        ["list", "bob", 200, "pods"],
        ["delete", "bob", 403, "pods"],
        ["list", "system:anonymous", 401, "nodes"],
      ],
      "one line per request; none for /healthz",
    );
    const [created, sealed, , denied] = events;
    assert.equal(created?.["level"], "Request");
    assert.equal((created?.["requestObject"] as { metadata?: { name?: string } }).metadata?.name, "web", "a pod's body at Request level");
    assert.equal(sealed?.["requestObject"], undefined, "a Secret's body never");
    assert.ok(!lines.join("\n").includes("hunter2"));
    assert.equal((denied?.["annotations"] as Record<string, string>)["authorization.k8s.io/decision"], "forbid");
    assert.equal((created?.["annotations"] as Record<string, string>)["authorization.k8s.io/decision"], "allow");
    assert.match(String(created?.["stageTimestamp"]), /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{6}Z$/);
  });
});
