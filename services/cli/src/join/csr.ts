// The kubelet TLS bootstrap, from the joining node's side: a fresh key and a
// CertificateSigningRequest for CN=system:node:<name>, O=system:nodes
// (signer kubernetes.io/kube-apiserver-client-kubelet, usages digital
// signature + client auth), created as the bootstrap token's user; the api's
// csrapprover approves it and its signer issues the certificate, which the
// node's kubeconfig then carries (its https identity).
import { execFile } from "node:child_process";
import { mkdtemp, readFile, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";
import { promisify } from "node:util";
import { CliError, type RestClient } from "../client.js";

const run = promisify(execFile);
const CSRS = "/apis/certificates.k8s.io/v1/certificatesigningrequests";
export const KUBELET_CLIENT_SIGNER = "kubernetes.io/kube-apiserver-client-kubelet";

/** A fresh EC P-256 key and its PEM CSR for node `nodeName`. */
export async function nodeKeyAndRequest(nodeName: string): Promise<{ key: string; request: string }> {
  const dir = await mkdtemp(path.join(tmpdir(), "choreo-join-"));
  try {
    const key = path.join(dir, "key.pem");
    const req = path.join(dir, "req.csr");
    await run("openssl", [
      "req",
      "-new",
      "-newkey",
      "ec",
      "-pkeyopt",
      "ec_paramgen_curve:prime256v1",
      "-nodes",
      "-subj",
      `/O=system:nodes/CN=system:node:${nodeName}`,
      "-keyout",
      key,
      "-out",
      req,
    ]);
    return { key: await readFile(key, "utf8"), request: await readFile(req, "utf8") };
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
}

interface CsrJson {
  metadata?: { name?: string };
  status?: { certificate?: string; conditions?: { type?: string; status?: string; reason?: string; message?: string }[] };
}

/** Creates the node's CSR and waits (up to `timeoutMs`) for its certificate (PEM); throws when it is denied or failed. */
export async function requestNodeCertificate(
  client: RestClient,
  nodeName: string,
  request: string,
  timeoutMs = 60_000,
): Promise<{ name: string; certificate: string }> {
  const created = await client.json<CsrJson>({
    method: "POST",
    path: CSRS,
    body: {
      apiVersion: "certificates.k8s.io/v1",
      kind: "CertificateSigningRequest",
      metadata: { generateName: "node-csr-" },
      spec: { request: Buffer.from(request).toString("base64"), signerName: KUBELET_CLIENT_SIGNER, usages: ["digital signature", "client auth"] },
    },
  });
  const name = created.metadata?.name ?? "";
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const csr = await client.json<CsrJson>({ path: `${CSRS}/${encodeURIComponent(name)}` });
    const refused = csr.status?.conditions?.find((c) => (c.type === "Denied" || c.type === "Failed") && c.status !== "False");
    if (refused)
      throw new CliError(
        `error: the certificate signing request ${name} for system:node:${nodeName} was ${(refused.type ?? "").toLowerCase()}: ${refused.message ?? refused.reason ?? ""}`,
      );
    if (csr.status?.certificate) return { name, certificate: Buffer.from(csr.status.certificate, "base64").toString("utf8") };
    if (Date.now() > deadline)
      throw new CliError(
        `error: the certificate signing request ${name} was not signed within ${timeoutMs / 1000} s (approve it: kubectl certificate approve ${name})`,
      );
    await new Promise((r) => setTimeout(r, 300));
  }
}
