import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { DESCRIBERS } from "./describers.js";

describe("certificatesigningrequest describer", () => {
  it("prints who asked, the signer, the requested duration and the status (Pending, Approved,Issued, Denied)", () => {
    const csr = {
      apiVersion: "certificates.k8s.io/v1",
      kind: "CertificateSigningRequest",
      metadata: { name: "node-csr-1", creationTimestamp: "2025-01-01T00:00:00Z" },
      spec: { signerName: "kubernetes.io/kube-apiserver-client-kubelet", username: "system:bootstrap:abcdef", expirationSeconds: 86400 },
      status: { conditions: [{ type: "Approved", status: "True" }], certificate: "LS0t" },
    };
    const text = DESCRIBERS["CertificateSigningRequest"]!(csr, {}, Date.parse("2025-01-01T00:10:00Z")).toString();
    assert.match(text, /^Name:\s+node-csr-1$/m);
    assert.doesNotMatch(text, /Namespace:/);
    assert.match(text, /^Requesting User:\s+system:bootstrap:abcdef$/m);
    assert.match(text, /^Signer:\s+kubernetes.io\/kube-apiserver-client-kubelet$/m);
    assert.match(text, /^Requested Duration:\s+86400s$/m);
    assert.match(text, /^Status:\s+Approved,Issued$/m);
    const pending = DESCRIBERS["CertificateSigningRequest"]!({ ...csr, status: {} }, {}, 0).toString();
    assert.match(pending, /^Status:\s+Pending$/m);
    const denied = DESCRIBERS["CertificateSigningRequest"]!({ ...csr, status: { conditions: [{ type: "Denied", status: "True" }] } }, {}, 0).toString();
    assert.match(denied, /^Status:\s+Denied$/m);
  });
});
