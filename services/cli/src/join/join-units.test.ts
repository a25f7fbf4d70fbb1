// The pure parts of choreo join and choreo token: the CA hash (checked
// against openssl's, as kubeadm's documentation computes it), the chain's
// root fetched from a TLS server without trusting it, Go durations.
import assert from "node:assert/strict";
import { execFileSync } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { createServer } from "node:https";
import type { AddressInfo } from "node:net";
import { tmpdir } from "node:os";
import path from "node:path";
import { after, describe, it } from "node:test";
import { caCertHash, fetchServerRoot, isCaHash } from "./ca-hash.js";
import { joinCommand } from "./command.js";
import { generateToken, parseDuration, TOKEN_PATTERN } from "./tokens.js";

const dir = mkdtempSync(path.join(tmpdir(), "choreo-join-units-"));
after(() => rmSync(dir, { recursive: true, force: true }));

function selfSigned(): { cert: string; key: string } {
  const cert = path.join(dir, "c.pem");
  const key = path.join(dir, "k.pem");
  execFileSync("openssl", [
    "req",
    "-x509",
    "-newkey",
    "ec",
    "-pkeyopt",
    "ec_paramgen_curve:prime256v1",
    "-nodes",
    "-days",
    "1",
    "-subj",
    "/CN=test",
    "-keyout",
    key,
    "-out",
    cert,
  ]);
  return { cert: readFileSync(cert, "utf8"), key: readFileSync(key, "utf8") };
}

describe("choreo join's pure parts", () => {
  it("hashes a CA's SubjectPublicKeyInfo as openssl does", () => {
    const { cert } = selfSigned();
    const pub = execFileSync("openssl", ["x509", "-pubkey", "-noout"], { input: cert });
    const der = execFileSync("openssl", ["pkey", "-pubin", "-outform", "der"], { input: pub });
    const expected = `sha256:${execFileSync("sha256sum", { input: der }).toString().split(" ")[0]}`;
    assert.equal(caCertHash(cert), expected);
    assert.ok(isCaHash(expected));
    for (const bad of ["", "sha256:", "sha256:XYZ", `sha1:${"0".repeat(64)}`, `sha256:${"0".repeat(63)}`]) assert.ok(!isCaHash(bad), bad);
  });

  it("fetches the root a TLS server presents, untrusted; refuses http", async () => {
    const { cert, key } = selfSigned();
    const server = createServer({ cert, key }, (_req, res) => res.end("ok"));
    await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
    try {
      const root = await fetchServerRoot(`https://127.0.0.1:${(server.address() as AddressInfo).port}`);
      assert.equal(caCertHash(root), caCertHash(cert));
    } finally {
      server.close();
    }
    await assert.rejects(fetchServerRoot("http://127.0.0.1:1"), /must be an https/);
  });

  it("parses Go-style durations and makes kubeadm-form tokens", () => {
    assert.equal(parseDuration("24h"), 86_400_000);
    assert.equal(parseDuration("1h30m"), 5_400_000);
    assert.equal(parseDuration("90s"), 90_000);
    assert.equal(parseDuration("0"), 0);
    for (const bad of ["", "1d", "h", "-1h", "1.5h"]) assert.throws(() => parseDuration(bad), /invalid duration/, bad);
    const seen = new Set<string>();
    for (let i = 0; i < 100; i++) {
      const t = generateToken();
      assert.match(t, TOKEN_PATTERN);
      seen.add(t);
    }
    assert.equal(seen.size, 100);
  });
});

describe("choreo join's flags", () => {
  it("refuses a --backend the node agent does not know, before anything runs", async () => {
    await assert.rejects(
      joinCommand(["--backend", "geneve"], () => undefined),
      /--backend must be auto, host-gw or vxlan, not geneve/,
    );
  });
});
