// The audit log against real files: the Event's shape, credentials never
// written whatever the level, rotation into numbered backups, no line lost or
// torn under concurrent finishes, and drops counted when the queue is full.
import assert from "node:assert/strict";
import { mkdtempSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { after, before, describe, it } from "node:test";
import { Registry } from "prom-client";
import { silentLogger } from "@choreo/kit/log";
import type { Attributes, UserInfo } from "../auth/types.js";
import { openAuditLog, type BeginOptions } from "./audit-log.js";
import type { AuditEvent } from "./event.js";
import { parsePolicy } from "./policy.js";

const alice: UserInfo = { name: "alice", uid: "u-1", groups: ["dev", "system:authenticated"], extra: {} };
const everything = parsePolicy("rules:\n- level: RequestResponse\n");

function request(a: Partial<Attributes>, more: Partial<BeginOptions> = {}): BeginOptions {
  const attrs: Attributes = {
    user: alice,
    verb: "create",
    resourceRequest: true,
    apiGroup: "",
    apiVersion: "v1",
    resource: "pods",
    subresource: "",
    namespace: "default",
    name: "",
    path: "",
    ...a,
  };
  return {
    user: attrs.user,
    verb: attrs.verb,
    attrs,
    requestURI: "/api/v1/namespaces/default/pods",
    sourceIP: "127.0.0.1",
    userAgent: "kubectl/v1.32.0",
    ...more,
  };
}

function lines(file: string): AuditEvent[] {
  return readFileSync(file, "utf8")
    .split("\n")
    .filter(Boolean)
    .map((l) => JSON.parse(l) as AuditEvent);
}

describe("audit log", () => {
  let dir: string;
  before(() => (dir = mkdtempSync(path.join(tmpdir(), "choreo-audit-"))));
  after(() => rmSync(dir, { recursive: true, force: true }));

  it("writes one audit.k8s.io/v1 Event per request, file mode 0600", async () => {
    const file = path.join(dir, "shape", "audit.log");
    const log = await openAuditLog({ file, policy: everything, log: silentLogger() });
    const pod = { apiVersion: "v1", kind: "Pod", metadata: { name: "web", managedFields: [{ manager: "kubectl" }] } };
    const entry = log.begin(request({ name: "web" }, { impersonatedUser: { name: "bob", uid: "", groups: ["ops"], extra: {} } }));
    assert.ok(entry);
    assert.equal(entry.level, "RequestResponse");
    assert.ok(entry.wantsRequestObject && entry.wantsResponseObject);
    entry.annotate("authorization.k8s.io/decision", "allow");
    entry.finish({
      code: 201,
      requestObject: JSON.stringify(pod),
      responseObject: pod,
      annotations: { "authorization.k8s.io/reason": 'RBAC: allowed by ClusterRoleBinding "x"' },
    });
    entry.finish({ code: 500 }); // a second finish writes nothing
    log.begin(request({ verb: "get", resourceRequest: false, resource: "", apiVersion: "", path: "/apis" }, { requestURI: "/apis" }))?.finish({
      code: 403,
      status: { status: "Failure", reason: "Forbidden", message: "no" },
    });
    await log.close();
    assert.equal(statSync(file).mode & 0o777, 0o600);
    const [ev, nonResource, ...rest] = lines(file);
    assert.equal(rest.length, 0);
    assert.equal(ev.kind, "Event");
    assert.equal(ev.apiVersion, "audit.k8s.io/v1");
    assert.equal(ev.stage, "ResponseComplete");
    assert.match(ev.auditID, /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/);
    assert.equal(ev.auditID, entry.auditID);
    assert.deepEqual(ev.user, { username: "alice", uid: "u-1", groups: ["dev", "system:authenticated"] });
    assert.deepEqual(ev.impersonatedUser, { username: "bob", groups: ["ops"] });
    assert.deepEqual(ev.sourceIPs, ["127.0.0.1"]);
    assert.equal(ev.userAgent, "kubectl/v1.32.0");
    assert.deepEqual(ev.objectRef, { resource: "pods", namespace: "default", name: "web", apiVersion: "v1" });
    assert.deepEqual(ev.responseStatus, { metadata: {}, code: 201 });
    assert.deepEqual(ev.requestObject, pod);
    assert.deepEqual(ev.responseObject, pod);
    assert.deepEqual(ev.annotations, { "authorization.k8s.io/decision": "allow", "authorization.k8s.io/reason": 'RBAC: allowed by ClusterRoleBinding "x"' });
    assert.match(ev.requestReceivedTimestamp, /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{6}Z$/);
    assert.match(ev.stageTimestamp, /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{6}Z$/);
    assert.ok(ev.stageTimestamp >= ev.requestReceivedTimestamp);
    assert.equal(nonResource.objectRef, undefined);
    assert.deepEqual(nonResource.responseStatus, { metadata: {}, code: 403, status: "Failure", reason: "Forbidden", message: "no" });
  });

  it("levels: None writes nothing, Metadata no bodies, Request no response; omitManagedFields", async () => {
    const file = path.join(dir, "levels.log");
    const policy = parsePolicy(`omitManagedFields: true
rules:
- level: None
  verbs: [list]
- level: Metadata
  verbs: [get]
- level: Request
  verbs: [create]
- level: Request
  verbs: [update]
  omitStages: [ResponseComplete]
`);
    const log = await openAuditLog({ file, policy, log: silentLogger() });
    assert.equal(log.begin(request({ verb: "list" })), undefined);
    assert.equal(log.begin(request({ verb: "update" })), undefined);
    const body = { kind: "Pod", metadata: { name: "a", managedFields: [{ manager: "x" }] } };
    log.begin(request({ verb: "get" }))?.finish({ code: 200, requestObject: body, responseObject: body });
    log.begin(request({ verb: "create" }))?.finish({ code: 201, requestObject: body, responseObject: body });
    await log.close();
    const [get, create, ...rest] = lines(file);
    assert.equal(rest.length, 0);
    assert.equal(get.level, "Metadata");
    assert.equal(get.requestObject, undefined);
    assert.equal(get.responseObject, undefined);
    assert.equal(create.level, "Request");
    assert.deepEqual(create.requestObject, { kind: "Pod", metadata: { name: "a" } });
    assert.equal(create.responseObject, undefined);
  });

  it("never writes a Secret's or a token's body, even at RequestResponse", async () => {
    const file = path.join(dir, "secrets.log");
    const log = await openAuditLog({ file, policy: everything, log: silentLogger() });
    const secret = {
      apiVersion: "v1",
      kind: "Secret",
      metadata: { name: "db" },
      data: { password: "aHVudGVyMi1zM2NyM3Q=" },
      stringData: { token: "hunter2-s3cr3t" },
    };
    const list = { kind: "SecretList", items: [secret] };
    const cases: [Partial<Attributes>, unknown][] = [
      [{ resource: "secrets", name: "db" }, secret],
      [{ resource: "secrets", verb: "list" }, list],
      [{ resource: "secrets", verb: "patch", name: "db" }, JSON.stringify({ stringData: { token: "hunter2-s3cr3t" } })],
      [
        { resource: "serviceaccounts", subresource: "token", name: "default" },
        { kind: "TokenRequest", status: { token: "hunter2-s3cr3t" } },
      ],
      [
        { apiGroup: "authentication.k8s.io", resource: "tokenreviews" },
        { kind: "TokenReview", spec: { token: "hunter2-s3cr3t" } },
      ],
      // A Secret's body sent to another resource's path (the gateway answers 400, but the entry was begun).
      [{ resource: "configmaps", name: "db" }, secret],
      [
        { resource: "configmaps", verb: "list" },
        { kind: "Table", rows: [{ cells: [], object: secret }] },
      ],
    ];
    for (const [a, body] of cases) {
      const e = log.begin(request(a));
      assert.ok(e);
      if (a.resource !== "configmaps") assert.ok(!e.wantsRequestObject && !e.wantsResponseObject, JSON.stringify(a));
      e.finish({ code: 200, requestObject: body, responseObject: Buffer.from(typeof body === "string" ? body : JSON.stringify(body)) });
    }
    await log.close();
    const text = readFileSync(file, "utf8");
    assert.equal(lines(file).length, cases.length);
    assert.doesNotMatch(text, /hunter2|aHVudGVy/);
    for (const ev of lines(file)) assert.equal(ev.level, "RequestResponse");
  });

  it("rotates by size into <file>.1 … <file>.N and keeps N", async () => {
    const file = path.join(dir, "rotate", "audit.log");
    const log = await openAuditLog({ file, policy: everything, maxSizeMB: 4 / 1024, maxBackups: 3, log: silentLogger() });
    const pad = "x".repeat(300);
    for (let i = 0; i < 200; i++) {
      log.begin(request({ name: `p${i}` }))?.finish({ code: 201, requestObject: { kind: "Pod", metadata: { name: `p${i}` }, pad } });
      if (i % 20 === 0) await new Promise((r) => setImmediate(r));
    }
    await log.close();
    assert.deepEqual(readdirSync(path.dirname(file)).sort(), ["audit.log", "audit.log.1", "audit.log.2", "audit.log.3"]);
    const names: string[] = [];
    for (const f of [`${file}.3`, `${file}.2`, `${file}.1`, file]) {
      assert.ok(statSync(f).size <= 4096, `${f}: ${statSync(f).size} bytes`);
      for (const ev of lines(f)) names.push(ev.objectRef?.name ?? "");
    }
    // The newest lines, in order, nothing torn: the last file holds p199.
    assert.equal(names.at(-1), "p199");
    const first = Number(names[0].slice(1));
    assert.deepEqual(
      names,
      Array.from({ length: 200 - first }, (_, i) => `p${first + i}`),
    );
  });

  it("appends to an existing file", async () => {
    const file = path.join(dir, "append.log");
    writeFileSync(file, '{"kind":"Event","auditID":"old"}\n');
    const log = await openAuditLog({ file, policy: everything, log: silentLogger() });
    log.begin(request({}))?.finish({ code: 201 });
    await log.close();
    assert.equal(lines(file).length, 2);
  });

  it("cuts a torn last line (a writer killed in the middle of a batch) before appending", async () => {
    const file = path.join(dir, "torn.log");
    writeFileSync(file, '{"kind":"Event","auditID":"old"}\n{"kind":"Event","auditID":"to');
    const log = await openAuditLog({ file, policy: everything, log: silentLogger() });
    log.begin(request({}))?.finish({ code: 201 });
    await log.close();
    assert.deepEqual(
      lines(file).map((e) => e.responseStatus?.code ?? e.auditID),
      ["old", 201],
    );
    // A file that is one torn line and nothing else is emptied.
    const only = path.join(dir, "torn-only.log");
    writeFileSync(only, "x".repeat(100_000));
    const again = await openAuditLog({ file: only, policy: everything, log: silentLogger() });
    again.begin(request({}))?.finish({ code: 200 });
    await again.close();
    assert.equal(lines(only).length, 1);
  });

  it("1,000 concurrent finishes make 1,000 whole lines", async () => {
    const file = path.join(dir, "concurrent.log");
    const log = await openAuditLog({ file, policy: everything, maxSizeMB: 1, log: silentLogger() });
    const entries = Array.from({ length: 1000 }, (_, i) => log.begin(request({ name: `p${i}` })));
    await Promise.all(
      entries.map(async (e, i) => {
        await new Promise((r) => setTimeout(r, i % 7));
        e?.finish({ code: 201, requestObject: { kind: "Pod", metadata: { name: `p${i}` }, spec: { text: 'é€😀\n"'.repeat(20) } } });
      }),
    );
    await log.close();
    const all = [
      file,
      ...readdirSync(dir)
        .filter((f) => f.startsWith("concurrent.log."))
        .map((f) => path.join(dir, f)),
    ].flatMap(lines);
    assert.equal(all.length, 1000);
    assert.equal(new Set(all.map((e) => e.objectRef?.name)).size, 1000);
    assert.equal(new Set(all.map((e) => e.auditID)).size, 1000);
  });

  it("drops and counts what does not fit the queue, never waiting", async () => {
    const file = path.join(dir, "drops.log");
    const metrics = new Registry();
    const log = await openAuditLog({ file, policy: everything, maxQueue: 10, log: silentLogger(), metrics });
    // Synchronously: the writer cannot take any line off the queue meanwhile (it takes the first at once).
    for (let i = 0; i < 50; i++) log.begin(request({ name: `p${i}` }))?.finish({ code: 201 });
    await log.close();
    const written = lines(file).length;
    const dropped = (await metrics.getSingleMetric("choreo_audit_events_dropped_total")?.get())?.values[0]?.value;
    assert.ok(written >= 10 && written <= 11, `written ${written}`);
    assert.equal(dropped, 50 - written);
    log.begin(request({}))?.finish({ code: 201 }); // after close: dropped, no throw
    assert.equal((await metrics.getSingleMetric("choreo_audit_events_dropped_total")?.get())?.values[0]?.value, 51 - written);
  });

  it("reads a policy file and refuses a bad one", async () => {
    const good = path.join(dir, "policy.yaml");
    writeFileSync(good, "apiVersion: audit.k8s.io/v1\nkind: Policy\nrules:\n- level: None\n  resources: [{resources: [pods]}]\n- level: Metadata\n");
    const file = path.join(dir, "from-file.log");
    const log = await openAuditLog({ file, policy: good, log: silentLogger() });
    assert.equal(log.begin(request({})), undefined);
    assert.equal(log.begin(request({ resource: "services" }))?.level, "Metadata");
    await log.close();
    const badFile = path.join(dir, "bad.yaml");
    writeFileSync(badFile, "rules:\n- level: Loud\n");
    await assert.rejects(openAuditLog({ file, policy: badFile, log: silentLogger() }), /rules\[0\]\.level: Unsupported value: "Loud"/);
  });
});
