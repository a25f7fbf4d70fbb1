// CertificateSigningRequest (certificates.k8s.io/v1), after Kubernetes'
// pkg/registry/certificates/certificates strategy and ValidateCertificateSigningRequest:
// who asked (spec.username, uid, groups) is the requester, set by the api on
// create whatever the body says; the spec never changes afterwards; a new
// CSR has no status (approval and the certificate come through the approval
// and status subresources: the approver and signer in ../../certificates).
import { CertificateSigningRequestStatus, type CertificateSigningRequest } from "@choreo/kit/gen/choreo/certificates/v1/certificates";
import type { Strategy } from "../generic/strategy.js";
import { requestUserInfo } from "../generic/admission-context.js";
import { Errors } from "../shared/validation.js";

/** Kubernetes' KeyUsage values. */
export const KEY_USAGES = [
  "signing",
  "digital signature",
  "content commitment",
  "key encipherment",
  "key agreement",
  "data encipherment",
  "cert sign",
  "crl sign",
  "encipher only",
  "decipher only",
  "any",
  "server auth",
  "client auth",
  "code signing",
  "email protection",
  "s/mime",
  "ipsec end system",
  "ipsec tunnel",
  "ipsec user",
  "timestamping",
  "ocsp signing",
  "microsoft sgc",
  "netscape sgc",
] as const;

const PEM_CSR = /^-----BEGIN (NEW )?CERTIFICATE REQUEST-----\r?\n([A-Za-z0-9+/=\r\n]+)-----END (NEW )?CERTIFICATE REQUEST-----\s*$/;
/** A signer name: a domain, a slash, a path (Kubernetes' ValidateSignerName, in short). */
const SIGNER =
  /^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)+\/[A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?(\/[A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?)*$/;

/** The DER inside a PEM certificate request, or undefined when `request` is not one. */
export function csrDer(request: Uint8Array): Buffer | undefined {
  const m = PEM_CSR.exec(Buffer.from(request).toString("utf8").trim() + "\n");
  if (!m) return undefined;
  const der = Buffer.from(m[2]!.replace(/\s+/g, ""), "base64");
  // A DER SEQUENCE at least.
  return der.length > 16 && der[0] === 0x30 ? der : undefined;
}

export const certificateSigningRequestStrategy: Strategy<CertificateSigningRequest> = {
  prepareCreate(csr, store) {
    const spec = (csr.spec ??= { request: new Uint8Array(), signerName: "", usages: [], username: "", uid: "", groups: [] });
    const user = store ? requestUserInfo(store) : undefined;
    spec.username = user?.name ?? "";
    spec.uid = user?.uid ?? "";
    spec.groups = [...(user?.groups ?? [])];
    csr.status = CertificateSigningRequestStatus.fromPartial({});
  },
  prepareUpdate(csr, old) {
    // The spec is what was asked; nothing changes it.
    csr.spec = structuredClone(old.spec);
  },
  validate(csr) {
    const e = new Errors();
    const spec = csr.spec;
    if (!spec?.request?.length) e.required("spec.request", false);
    else if (!csrDer(spec.request)) e.invalid("spec.request", "<bytes>", 'must be a PEM block of type "CERTIFICATE REQUEST"');
    if (!spec?.signerName) e.required("spec.signerName", false);
    else if (!SIGNER.test(spec.signerName) || spec.signerName.length > 571)
      e.invalid("spec.signerName", spec.signerName, "must be a fully qualified domain and path of the form 'example.com/signer-name'");
    const exp = spec?.expirationSeconds;
    if (exp !== undefined && exp < 600) e.invalid("spec.expirationSeconds", exp, "may not specify a duration less than 600 seconds (10 minutes)");
    for (const [i, u] of (spec?.usages ?? []).entries()) if (!(KEY_USAGES as readonly string[]).includes(u)) e.notSupported(`spec.usages[${i}]`, u, KEY_USAGES);
    const seen = new Set<string>();
    for (const [i, c] of (csr.status?.conditions ?? []).entries()) {
      if (!["Approved", "Denied", "Failed"].includes(c.type)) e.notSupported(`status.conditions[${i}].type`, c.type, ["Approved", "Denied", "Failed"]);
      if (seen.has(c.type)) e.duplicate(`status.conditions[${i}].type`, c.type);
      seen.add(c.type);
    }
    if (seen.has("Approved") && seen.has("Denied")) e.invalid("status.conditions", "Approved, Denied", "Approved and Denied conditions are mutually exclusive");
    return e.causes;
  },
};
