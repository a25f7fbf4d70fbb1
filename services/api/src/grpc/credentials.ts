// TLS on the gRPC port as on HTTPS: the api's serving certificate, and a
// client certificate asked for but not required — one signed by the cluster's
// client CA names the caller (CN the user, each O a group, as Kubernetes'
// x509 authenticator); without one the caller sends a bearer token.
import type { PeerCertificate } from "node:tls";
import * as grpc from "@grpc/grpc-js";
import { experimental } from "@grpc/grpc-js";
import { AUTHENTICATED, type UserInfo } from "../auth/types.js";

/** The api's serving certificate and key (PEM), and the client CA certificates are verified against. */
export interface GrpcTls {
  cert: string;
  key: string;
  clientCa?: string;
}

/**
 * Server credentials: plaintext without `tls`; else TLS with the client
 * certificate requested and verified against `clientCa` but optional
 * (grpc-js' `createSsl` either never asks for one or refuses callers without).
 */
export function serverCredentials(tls: GrpcTls | undefined): grpc.ServerCredentials {
  if (!tls) return grpc.ServerCredentials.createInsecure();
  if (!tls.clientCa) return grpc.ServerCredentials.createSsl(null, [{ private_key: Buffer.from(tls.key), cert_chain: Buffer.from(tls.cert) }], false);
  // One provider serves both: grpc-js' factory names its two parameters in the other order than it uses them.
  // Listeners hear asynchronously, as from a file watcher: told at once, grpc-js would update no server yet.
  const identity = { certificate: Buffer.from(tls.cert), privateKey: Buffer.from(tls.key) };
  const ca = { caCertificate: Buffer.from(tls.clientCa) };
  const provider: experimental.CertificateProvider = {
    addCaCertificateListener: (l) => void setImmediate(() => l(ca)),
    removeCaCertificateListener: () => undefined,
    addIdentityCertificateListener: (l) => void setImmediate(() => l(identity)),
    removeIdentityCertificateListener: () => undefined,
  };
  return experimental.createCertificateProviderServerCredentials(provider, provider, false);
}

/**
 * The user of a call's verified client certificate, or undefined (plaintext,
 * no certificate, or one the client CA did not sign: grpc-js gives a peer
 * certificate only for an authorized TLS socket).
 */
export function userOfCall(call: { getAuthContext(): { sslPeerCertificate?: PeerCertificate } }): UserInfo | undefined {
  const cert = call.getAuthContext().sslPeerCertificate;
  const cn = cert?.subject?.CN;
  const name = Array.isArray(cn) ? (cn[0] as string | undefined) : cn;
  if (!cert || !name) return undefined;
  const o = cert.subject.O;
  const groups = o === undefined ? [] : Array.isArray(o) ? o : [o];
  return { name, uid: "", groups: [...new Set([...groups, AUTHENTICATED])], extra: {} };
}
