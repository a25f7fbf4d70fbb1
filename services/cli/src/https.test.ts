// The client over https: the kubeconfig's CA, insecure-skip-tls-verify, and the bearer token.
import { describe, it, before, after } from "node:test";
import assert from "node:assert/strict";
import { execFileSync } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { runCli } from "./main.js";
import { FakeApi } from "./testing/fake-api.js";

function hasOpenssl(): boolean {
  try {
    execFileSync("openssl", ["version"], { stdio: "ignore" });
    return true;
  } catch {
    return false;
  }
}

describe("https", { skip: !hasOpenssl() && "openssl not installed" }, () => {
  let dir: string;
  let api: FakeApi;
  let cert: string;

  before(async () => {
    dir = mkdtempSync(path.join(tmpdir(), "choreo-tls-"));
    execFileSync(
      "openssl",
      [
        "req",
        "-x509",
        "-newkey",
        "ec",
        "-pkeyopt",
        "ec_paramgen_curve:prime256v1",
        "-nodes",
        "-keyout",
        path.join(dir, "key.pem"),
        "-out",
        path.join(dir, "cert.pem"),
        "-days",
        "1",
        "-subj",
        "/CN=choreo",
        "-addext",
        "subjectAltName=IP:127.0.0.1",
      ],
      { stdio: "ignore" },
    );
    cert = readFileSync(path.join(dir, "cert.pem"), "utf8");
    api = await new FakeApi({ cert, key: readFileSync(path.join(dir, "key.pem"), "utf8") }).start();
  });
  after(async () => {
    await api.stop();
    rmSync(dir, { recursive: true, force: true });
  });

  function kubeconfig(cluster: string): string {
    const file = path.join(dir, `kc-${Math.random().toString(36).slice(2)}.yaml`);
    writeFileSync(
      file,
      [
        "apiVersion: v1",
        "kind: Config",
        "current-context: c",
        "clusters:",
        "- name: c",
        "  cluster:",
        `    server: ${api.url}`,
        cluster,
        "users:",
        "- name: u",
        "  user:",
        "    token: tls-token",
        "contexts:",
        "- name: c",
        "  context:",
        "    cluster: c",
        "    user: u",
        "",
      ].join("\n"),
    );
    return file;
  }

  async function version(file: string): Promise<{ code: number; out: string; err: string }> {
    let out = "";
    let err = "";
    const code = await runCli(["version"], {
      stdout: { write: (s: string) => (out += s) },
      stderr: { write: (s: string) => (err += s) },
      env: { KUBECONFIG: file },
      cwd: dir,
    });
    return { code, out, err };
  }

  it("trusts certificate-authority-data and sends the token", async () => {
    const r = await version(kubeconfig(`    certificate-authority-data: ${Buffer.from(cert).toString("base64")}`));
    assert.equal(r.err, "");
    assert.match(r.out, /Server Version: v1\.32\.0-choreo/);
    assert.equal(api.requests.at(-1)?.headers["authorization"], "Bearer tls-token");
  });

  it("insecure-skip-tls-verify connects without a CA", async () => {
    const r = await version(kubeconfig("    insecure-skip-tls-verify: true"));
    assert.equal(r.code, 0);
  });

  it("an untrusted certificate fails", async () => {
    const r = await version(kubeconfig("    proxy-url: ''"));
    assert.equal(r.code, 1);
    assert.match(r.err, /^Unable to connect to the server: .*certificate/m);
  });
});
