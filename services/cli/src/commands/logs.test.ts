// `choreo logs` in-process against a small HTTP server standing in for the api.
import assert from "node:assert/strict";
import http from "node:http";
import type { AddressInfo } from "node:net";
import { after, before, describe, it } from "node:test";
import { waitFor } from "@choreo/kit/testing";
import { runCli } from "../main.js";
import { logQuery, parseDuration } from "./logs.js";

type Handler = (req: http.IncomingMessage, res: http.ServerResponse) => void;

let server: http.Server;
let url: string;
let handler: Handler;
const seen: string[] = [];

before(async () => {
  server = http.createServer((req, res) => {
    seen.push(req.url ?? "");
    handler(req, res);
  });
  await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
  url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
});
after(async () => {
  server.closeAllConnections();
  await new Promise((r) => server.close(r));
});

async function run(argv: string[], signal?: AbortSignal, out: { text: string } = { text: "" }): Promise<{ code: number; out: string; err: string }> {
  let err = "";
  const code = await runCli([...argv, "--server", url], {
    stdout: { write: (s: string) => (out.text += s) },
    stderr: { write: (s: string) => (err += s) },
    env: { HOME: "/nonexistent" },
    cwd: "/",
    ...(signal ? { signal } : {}),
  });
  return { code, out: out.text, err };
}

describe("choreo logs", () => {
  it("prints the log of a pod in the namespace", async () => {
    handler = (_req, res) => {
      res.writeHead(200, { "Content-Type": "text/plain" });
      res.end("one\ntwo\n");
    };
    assert.deepEqual(await run(["logs", "web", "-n", "prod"]), { code: 0, out: "one\ntwo\n", err: "" });
    assert.equal(seen.at(-1), "/api/v1/namespaces/prod/pods/web/log");
    assert.equal((await run(["logs", "pod/web"])).code, 0);
    assert.equal(seen.at(-1), "/api/v1/namespaces/default/pods/web/log");
  });

  it("turns flags into kubectl's query", async () => {
    assert.equal((await run(["logs", "web", "-c", "side", "--tail", "1", "--since", "1m30s", "--timestamps", "-p"])).code, 0);
    const q = new URL(seen.at(-1) ?? "", url).searchParams;
    assert.deepEqual(Object.fromEntries(q), { container: "side", tailLines: "1", sinceSeconds: "90", timestamps: "true", previous: "true" });
    assert.deepEqual(logQuery({ tail: "-1" }), { container: undefined });
    assert.throws(() => logQuery({ tail: "x" }), /invalid argument "x" for "--tail" flag/);
    assert.throws(() => logQuery({ since: "5 minutes" }), /invalid duration/);
    assert.equal(parseDuration("1h30m"), 5_400_000);
    assert.equal(parseDuration("250ms"), 250);
    assert.equal(parseDuration("10"), undefined);
  });

  it("prints the server's Status like kubectl", async () => {
    handler = (_req, res) => {
      res.writeHead(400, { "Content-Type": "application/json" });
      res.end(
        JSON.stringify({
          kind: "Status",
          apiVersion: "v1",
          status: "Failure",
          reason: "BadRequest",
          code: 400,
          message: "a container name must be specified for pod web, choose one of: [a b]",
        }),
      );
    };
    assert.deepEqual(await run(["logs", "web"]), {
      code: 1,
      out: "",
      err: "Error from server (BadRequest): a container name must be specified for pod web, choose one of: [a b]\n",
    });
    assert.match((await run(["logs"])).err, /POD or TYPE\/NAME is a required argument/);
    assert.match((await run(["logs", "rc/web"])).err, /only pods are supported/);
  });

  it("follows: prints lines as they come until interrupted", async () => {
    let res: http.ServerResponse | undefined;
    handler = (_req, r) => {
      r.writeHead(200, { "Content-Type": "text/plain" });
      r.write("first\n");
      res = r;
    };
    const ac = new AbortController();
    const out = { text: "" };
    const running = run(["logs", "web", "-f"], ac.signal, out);
    await waitFor(() => out.text === "first\n");
    res?.write("second\n");
    await waitFor(() => out.text === "first\nsecond\n");
    assert.equal(new URL(seen.at(-1) ?? "", url).searchParams.get("follow"), "true");
    ac.abort();
    assert.deepEqual(await running, { code: 0, out: "first\nsecond\n", err: "" });
  });
});
