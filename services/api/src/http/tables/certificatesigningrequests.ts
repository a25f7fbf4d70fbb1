// CertificateSigningRequest columns, after kubectl's printCertificateSigningRequest:
// NAME AGE SIGNERNAME REQUESTOR REQUESTEDDURATION CONDITION.
import { since } from "./age.js";
import { rec, str } from "./json.js";
import { AGE_COLUMN, NAME_COLUMN, col, type KindTable } from "./types.js";

/** kubectl's condition text: Approved,Issued / Denied / Pending / Failed. */
export function csrCondition(status: Record<string, unknown>): string {
  const conditions = Array.isArray(status["conditions"]) ? (status["conditions"] as unknown[]).map(rec) : [];
  const set = conditions.filter((c) => str(c["status"]) !== "False" && str(c["type"])).map((c) => str(c["type"]));
  const parts = set.length ? set : ["Pending"];
  if (str(status["certificate"])) parts.push("Issued");
  return parts.join(",");
}

/** A duration as kubectl shows requested durations (`24h`, `10m`), `<none>` when unset. */
function duration(v: unknown): string {
  if (typeof v !== "number" || v <= 0) return "<none>";
  if (v % 86_400 === 0) return `${v / 86_400}d`;
  if (v % 3_600 === 0) return `${v / 3_600}h`;
  if (v % 60 === 0) return `${v / 60}m`;
  return `${v}s`;
}

export const certificateSigningRequestTable: KindTable = {
  columns: [
    NAME_COLUMN,
    AGE_COLUMN,
    col("SignerName", "Name of the signer the request is for."),
    col("Requestor", "Who asked for the certificate."),
    col("RequestedDuration", "The duration asked for."),
    col("Condition", "Approved, Denied, Failed or Pending; Issued once signed."),
  ],
  cells(csr, now) {
    const meta = rec(csr["metadata"]);
    const spec = rec(csr["spec"]);
    return [
      str(meta["name"]),
      since(meta["creationTimestamp"], now),
      str(spec["signerName"]),
      str(spec["username"]),
      duration(spec["expirationSeconds"]),
      csrCondition(rec(csr["status"])),
    ];
  },
};
