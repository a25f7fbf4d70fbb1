// test-tier: servers
// The event-stream door's front step, against a real api and nats-server,
// with the read-only subscriber's NATS user: examples/audit-subscriber
// killed -9 mid-stream and restarted writes every revision of the stream
// once, in order; examples/webhook-forwarder POSTs each change to a local
// HTTP server; `choreo events` prints one line per change.
import assert from "node:assert/strict";
import { readFileSync, existsSync } from "node:fs";
import { createServer, type Server } from "node:http";
import path from "node:path";
import { after, before, describe, it } from "node:test";
import { jetstreamManager } from "@nats-io/jetstream";
import { emptyMeta } from "@choreo/kit";
import { streamState } from "@choreo/kit/bus";
import { subscriberNatsPermissions } from "@choreo/kit/secrets";
import { startProcess, waitFor, type ManagedProcess } from "@choreo/kit/testing";
import { ChoreoClient } from "@choreo/client";
import { runCli } from "@choreo/cli";
import { ROOT, startCluster, type TestCluster } from "./support/cluster.js";

/** Revisions of a JSON-lines file's complete lines. */
function fileRevisions(file: string): number[] {
  if (!existsSync(file)) return [];
  const text = readFileSync(file, "utf8");
  return text
    .slice(0, text.lastIndexOf("\n") + 1)
    .split("\n")
    .filter(Boolean)
    .map((l) => (JSON.parse(l) as { revision: number }).revision);
}

describe("event-stream subscribers: examples and choreo events", () => {
  let c: TestCluster;
  let client: ChoreoClient;
  let env: Record<string, string>;
  const procs: ManagedProcess[] = [];
  const example = (name: string, args: string[]): Promise<ManagedProcess> =>
    startProcess({
      name,
      cmd: process.execPath,
      args: ["--import", "tsx", path.join(ROOT, "examples", name, "main.ts"), ...args],
      env: { ...process.env, ...env },
      cwd: ROOT,
      readyWhen: /"connected"/,
    }).then((p) => (procs.push(p), p));
  const configMap = (namespace: string, name: string, data: Record<string, string> = { k: "v" }) =>
    client.create("configMap", { apiVersion: "v1", kind: "ConfigMap", metadata: emptyMeta({ name, namespace }), data, binaryData: {}, immutable: undefined });

  /** Waits until the event log holds revision `rev` (the api's relay publishes after the write is answered). */
  const logHolds = async (rev: number): Promise<void> => {
    const jsm = await jetstreamManager(c.nc);
    await waitFor(async () => (await streamState(jsm)).lastRevision >= rev, { timeoutMs: 30_000, message: `the log at revision ${rev}` });
  };

  before(async () => {
    c = await startCluster();
    client = new ChoreoClient(c.nc, { token: c.token });
    env = { CHOREO_NATS_URL: c.nats.address, CHOREO_NATS_CREDENTIALS: await c.nats.addUser("subscriber", subscriberNatsPermissions()) };
  });
  after(async () => {
    for (const p of procs) await p.stop(2_000).catch(() => undefined);
    await c?.stop();
  });

  it("audit-subscriber: killed -9 mid-stream and restarted, its file holds every revision of the stream once, in order", async () => {
    const file = path.join(c.dir, "audit.jsonl");
    let audit = await example("audit-subscriber", [file, "audit"]);
    // Writes all along: 400 ConfigMaps, 8 at a time.
    let written = 0;
    const writer = (async () => {
      for (let i = 0; i < 400; i += 8) {
        await Promise.all(Array.from({ length: 8 }, (_, j) => configMap("default", `audit-${i + j}`)));
        written += 8;
        await new Promise((r) => setTimeout(r, 5));
      }
    })();
    await waitFor(() => fileRevisions(file).length > 100, { timeoutMs: 60_000, message: "100 lines before the kill" });
    await audit.kill();
    const atKill = fileRevisions(file).length;
    const writtenAtKill = written;
    assert.ok(writtenAtKill < 400, `killed mid-stream (${writtenAtKill} written)`);
    audit = await example("audit-subscriber", [file, "audit"]);
    await writer;
    await logHolds(Number((await client.list("configmaps")).resourceVersion));
    const all: number[] = [];
    for await (const ev of client.subscribe({ fromRevision: 0, untilCaughtUp: true })) all.push(ev.revision);
    const last = all.at(-1) ?? 0;
    await waitFor(() => fileRevisions(file).at(-1) === last, { timeoutMs: 60_000, message: `the file up to revision ${last}` });
    const revs = fileRevisions(file);
    assert.deepEqual(
      revs.filter((r) => r <= last),
      all,
      "every revision of the stream once, in order",
    );
    assert.ok(all.length >= 400 && atKill < all.length, `${atKill} lines at the kill, ${all.length} in the end`);
    console.log(JSON.stringify({ linesAtKill: atKill, writtenAtKill, total: revs.length, lastRevision: last }));
    await audit.stop(5_000);
  });

  it("webhook-forwarder POSTs each change (JSON, Choreo-Revision) to an HTTP server", async () => {
    const got: { revision: number; type: string; name: string; header: string }[] = [];
    const server: Server = createServer((req, res) => {
      let body = "";
      req.on("data", (d: Buffer) => (body += d.toString()));
      req.on("end", () => {
        const ev = JSON.parse(body) as { revision: number; type: string; name: string };
        got.push({ ...ev, header: String(req.headers["choreo-revision"]) });
        res.end("ok");
      });
    });
    await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
    const port = (server.address() as { port: number }).port;
    try {
      const since = Number((await client.list("namespaces")).resourceVersion);
      const fwd = await example("webhook-forwarder", [
        `http://127.0.0.1:${port}/hook`,
        "--resource",
        "configmaps",
        "--since",
        String(since),
        "--durable",
        "hook",
      ]);
      for (let i = 0; i < 20; i++) await configMap("default", `hook-${i}`);
      await client.delete("configmaps", "default", "hook-0");
      await waitFor(() => got.length >= 21, { timeoutMs: 30_000, message: `21 POSTs (${got.length})` });
      assert.deepEqual(
        got.map((g) => `${g.type} ${g.name}`),
        [...Array.from({ length: 20 }, (_, i) => `ADDED hook-${i}`), "DELETED hook-0"],
      );
      assert.ok(got.every((g, i) => String(g.revision) === g.header && (i === 0 || g.revision > (got[i - 1]?.revision ?? 0))));
      await fwd.stop(5_000);
    } finally {
      server.close();
    }
  });

  it("choreo events: one line per change, MODIFIED naming what changed; -o json", async () => {
    const since = Number((await client.list("namespaces")).resourceVersion);
    await configMap("default", "ev-a");
    const a = await client.typed("configMap").get("default", "ev-a");
    await client.update("configMap", { ...a, data: { k: "changed" }, metadata: { ...a.metadata!, labels: { x: "y" } } });
    const deleted = await client.delete("configmaps", "default", "ev-a");
    await logHolds(Number(deleted.metadata?.resourceVersion));
    const run = async (...args: string[]): Promise<string[]> => {
      let out = "";
      const code = await runCli(["events", "--since", String(since), "--resource", "configmaps", "-n", "default", ...args], {
        stdout: { write: (s: string) => (out += s) },
        stderr: { write: (s: string) => (out += s) },
        env,
      });
      assert.equal(code, 0, out);
      return out.trimEnd().split("\n");
    };
    const lines = (await run()).map((l) => l.replace(/\s+/g, " "));
    assert.deepEqual(
      lines.map((l) => l.split(" ").slice(1).join(" ")),
      ["ADDED ConfigMap default/ev-a", "MODIFIED ConfigMap default/ev-a data,metadata.labels", "DELETED ConfigMap default/ev-a"],
    );
    assert.ok(Number(lines[0]?.split(" ")[0]) > since);
    const json = (await run("-o", "json")).map((l) => JSON.parse(l) as { type: string; changed: string[]; object: { data: Record<string, string> } });
    assert.deepEqual(json[1]?.changed, ["data", "metadata.labels"]);
    assert.equal(json[1]?.object.data["k"], "changed");
    // Read-only credentials: the CLI needs no api token.
    assert.ok(!("token" in env));
  });
  it("choreo events -w follows new changes until Ctrl-C; client.watch() lists, then follows", async () => {
    const ac = new AbortController();
    let out = "";
    const run = runCli(
      ["events", "-w", "--since", String(Number((await client.list("namespaces")).resourceVersion)), "--resource", "configmaps", "-n", "default"],
      {
        stdout: { write: (s: string) => (out += s) },
        stderr: { write: (s: string) => (out += s) },
        env,
        signal: ac.signal,
      },
    );
    await configMap("default", "w-1");
    await waitFor(() => /ADDED\s+ConfigMap\s+default\/w-1/.test(out), { timeoutMs: 15_000, message: `the -w line (${out})` });
    ac.abort();
    assert.equal(await run, 0, out);

    const wac = new AbortController();
    const seen: string[] = [];
    const watching = (async () => {
      for await (const ev of client.watch("configmaps", { namespace: "default", labelSelector: "watch=me", signal: wac.signal })) {
        seen.push(`${ev.type} ${ev.object.metadata?.name}`);
        if (seen.length === 2) wac.abort();
      }
    })();
    await client.create("configMap", {
      apiVersion: "v1",
      kind: "ConfigMap",
      metadata: emptyMeta({ name: "w-2", namespace: "default", labels: { watch: "me" } }),
      data: {},
      binaryData: {},
      immutable: undefined,
    });
    await configMap("default", "w-3"); // no label: not seen
    await client.create("configMap", {
      apiVersion: "v1",
      kind: "ConfigMap",
      metadata: emptyMeta({ name: "w-4", namespace: "default", labels: { watch: "me" } }),
      data: {},
      binaryData: {},
      immutable: undefined,
    });
    await watching;
    assert.equal(seen.length, 2);
    assert.ok(
      seen.every((l) => /^ADDED w-[24]$/.test(l)),
      seen.join("; "),
    );
  });
});
