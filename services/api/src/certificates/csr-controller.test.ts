// The csrapprover and signer over the real registry (MemoryStore) and the
// openssl CLI: a bootstrapper's node client CSR is approved then signed by
// the client CA (CN, O, clientAuth checked on the certificate); what is not a
// node's client certificate, or not asked by a bootstrapper or the node
// itself, stays pending; a person's approval of a client CSR is signed; a
// denied one is never signed; the requester is who asked, not the body.
import assert from "node:assert/strict";
import { execFileSync } from "node:child_process";
import { X509Certificate } from "node:crypto";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { after, before, describe, it } from "node:test";
import { unwrap, wrap } from "@choreo/kit";
import { fromKubeJson } from "@choreo/kit/kube-json";
import { silentLogger } from "@choreo/kit/log";
import type { CertificateSigningRequest } from "@choreo/kit/gen/choreo/certificates/v1/certificates";
import { ensureCa, type ClientCa } from "@choreo/kit/secrets";
import type { UserInfo } from "../auth/types.js";
import { admissionScope } from "../registry/generic/admission-context.js";
import { createRegistry } from "../registry/index.js";
import type { Registry } from "../registry/registry.js";
import { MemoryStore } from "../storage/memory-store.js";
import { CsrController, KUBELET_CLIENT_SIGNER } from "./csr-controller.js";

const dir = mkdtempSync(path.join(tmpdir(), "choreo-csr-test-"));
let ca: ClientCa;
before(async () => {
  ca = await ensureCa({ certFile: path.join(dir, "ca.crt"), keyFile: path.join(dir, "ca.key") }, "test-client-ca");
});
after(() => rmSync(dir, { recursive: true, force: true }));

const BOOTSTRAPPER: UserInfo = { name: "system:bootstrap:abcdef", uid: "", groups: ["system:bootstrappers", "system:authenticated"], extra: {} };
const ALICE: UserInfo = { name: "alice", uid: "u-alice", groups: ["system:authenticated"], extra: {} };

/** A PEM CSR for `subject` (openssl `-subj`), with a SAN when asked. */
function pemRequest(subject: string, san?: string): string {
  const key = path.join(dir, `k-${Math.random().toString(36).slice(2)}.pem`);
  return execFileSync("openssl", [
    "req",
    "-new",
    "-newkey",
    "ec",
    "-pkeyopt",
    "ec_paramgen_curve:prime256v1",
    "-nodes",
    "-subj",
    subject,
    "-keyout",
    key,
    ...(san ? ["-addext", `subjectAltName=${san}`] : []),
  ]).toString();
}

async function create(r: Registry, user: UserInfo, name: string, pem: string, o: { signer?: string; usages?: string[]; username?: string } = {}) {
  return r.create(
    {
      object: fromKubeJson({
        apiVersion: "certificates.k8s.io/v1",
        kind: "CertificateSigningRequest",
        metadata: { name },
        spec: {
          request: Buffer.from(pem).toString("base64"),
          signerName: o.signer ?? KUBELET_CLIENT_SIGNER,
          usages: o.usages ?? ["digital signature", "client auth"],
          ...(o.username ? { username: o.username } : {}),
        },
      }),
      dryRun: false,
    },
    admissionScope({ user: user.name, userInfo: user, warn: () => undefined }),
  );
}

const get = async (r: Registry, name: string) =>
  unwrap(await r.get({ resource: "certificatesigningrequests", namespace: "", name })) as CertificateSigningRequest;

function setup() {
  const r = createRegistry({ store: new MemoryStore(), serviceCidr: "10.96.0.0/16", log: silentLogger() });
  return { r, c: new CsrController({ handlers: r, ca, log: silentLogger() }) };
}

describe("csr approver and signer", () => {
  it("approves a bootstrapper's node client CSR, then signs it with the client CA", async () => {
    const { r, c } = setup();
    // The body's username is not who asked: the api writes the requester.
    await create(r, BOOTSTRAPPER, "node-csr-1", pemRequest("/O=system:nodes/CN=system:node:n1"), { username: "system:admin" });
    assert.equal((await get(r, "node-csr-1")).spec?.username, "system:bootstrap:abcdef");
    assert.equal(await c.reconcile("node-csr-1"), "approved");
    assert.equal(await c.reconcile("node-csr-1"), "signed");
    assert.equal(await c.reconcile("node-csr-1"), "none");
    const csr = await get(r, "node-csr-1");
    assert.deepEqual(
      csr.status?.conditions.map((x) => [x.type, x.status, x.reason]),
      [["Approved", "True", "AutoApproved"]],
    );
    const cert = new X509Certificate(Buffer.from(csr.status!.certificate));
    assert.ok(cert.verify(new X509Certificate(ca.pem).publicKey));
    assert.match(cert.subject, /CN=system:node:n1/);
    assert.match(cert.subject, /O=system:nodes/);
    assert.deepEqual(cert.keyUsage, ["1.3.6.1.5.5.7.3.2"]);
  });

  it("leaves pending what is not a node's client certificate asked by a bootstrapper", async () => {
    const { r, c } = setup();
    const cases: [string, UserInfo, string, Parameters<typeof create>[4]][] = [
      ["wrong-org", BOOTSTRAPPER, pemRequest("/O=system:masters/CN=system:node:n1"), {}],
      ["extra-ou", BOOTSTRAPPER, pemRequest("/O=system:nodes/OU=x/CN=system:node:n1"), {}],
      ["not-a-node", BOOTSTRAPPER, pemRequest("/O=system:nodes/CN=alice"), {}],
      ["with-san", BOOTSTRAPPER, pemRequest("/O=system:nodes/CN=system:node:n1", "DNS:evil.example"), {}],
      ["server-auth", BOOTSTRAPPER, pemRequest("/O=system:nodes/CN=system:node:n1"), { usages: ["digital signature", "client auth", "server auth"] }],
      ["other-signer", BOOTSTRAPPER, pemRequest("/O=system:nodes/CN=system:node:n1"), { signer: "kubernetes.io/kube-apiserver-client" }],
      ["by-alice", ALICE, pemRequest("/O=system:nodes/CN=system:node:n1"), {}],
    ];
    for (const [name, user, pem, o] of cases) await create(r, user, name, pem, o);
    for (const [name] of cases) {
      assert.equal(await c.reconcile(name), "none", name);
      const csr = await get(r, name);
      assert.deepEqual(csr.status?.conditions ?? [], [], name);
      assert.equal(csr.status?.certificate?.length ?? 0, 0, name);
    }
  });

  it("signs a client CSR a person approved; never a denied one", async () => {
    const { r, c } = setup();
    await create(r, ALICE, "alice-csr", pemRequest("/CN=alice/O=devs"), { signer: "kubernetes.io/kube-apiserver-client" });
    await create(r, BOOTSTRAPPER, "denied-csr", pemRequest("/O=system:nodes/CN=system:node:n2"));
    const decide = async (name: string, type: string) => {
      const csr = await get(r, name);
      csr.status = {
        conditions: [{ type, status: "True", reason: "Test", message: "", lastUpdateTime: "", lastTransitionTime: "" }],
        certificate: new Uint8Array(),
      };
      await r.updateStatus({ object: wrap("certificateSigningRequest", csr), dryRun: false });
    };
    await decide("alice-csr", "Approved");
    await decide("denied-csr", "Denied");
    assert.equal(await c.reconcile("alice-csr"), "signed");
    assert.match(new X509Certificate(Buffer.from((await get(r, "alice-csr")).status!.certificate)).subject, /CN=alice/);
    assert.equal(await c.reconcile("denied-csr"), "none");
    assert.equal((await get(r, "denied-csr")).status?.certificate?.length ?? 0, 0);
  });

  it("refuses a request that is no PEM CSR, and a spec change", async () => {
    const { r } = setup();
    await assert.rejects(create(r, BOOTSTRAPPER, "garbage", "not a request"), /spec.request/);
    await create(r, BOOTSTRAPPER, "fixed", pemRequest("/O=system:nodes/CN=system:node:n3"));
    const csr = await get(r, "fixed");
    csr.spec!.signerName = "kubernetes.io/kube-apiserver-client";
    const updated = unwrap(await r.update({ object: wrap("certificateSigningRequest", csr), dryRun: false })) as CertificateSigningRequest;
    assert.equal(updated.spec?.signerName, KUBELET_CLIENT_SIGNER);
  });
});
