// kubeadm's discovery-token-ca-cert-hash: `sha256:<hex>` of a CA
// certificate's SubjectPublicKeyInfo (DER). `choreo join` fetches the api's
// certificate chain without trusting it, and goes on (sending its token)
// only when the chain's root has the hash it was given.
import { createHash, X509Certificate } from "node:crypto";
import tls from "node:tls";

/** `sha256:<hex>` of the SubjectPublicKeyInfo of a PEM certificate. */
export function caCertHash(pem: string | Buffer): string {
  const spki = new X509Certificate(pem).publicKey.export({ type: "spki", format: "der" });
  return `sha256:${createHash("sha256").update(spki).digest("hex")}`;
}

/** Whether `s` is a well-formed `sha256:<64 hex>`. */
export function isCaHash(s: string): boolean {
  return /^sha256:[0-9a-f]{64}$/.test(s);
}

/** The PEM of the root of the certificate chain `https://host:port` presents (not verified: compare its hash before trusting it). */
export function fetchServerRoot(server: string, timeoutMs = 10_000): Promise<string> {
  const u = new URL(server);
  if (u.protocol !== "https:") return Promise.reject(new Error(`--server must be an https:// URL, got ${server}`));
  return new Promise((resolve, reject) => {
    const host = u.hostname.replace(/^\[|\]$/g, "");
    const socket = tls.connect(
      { host, port: Number(u.port || 443), rejectUnauthorized: false, ...(/^[\d.:]+$/.test(host) ? {} : { servername: host }) },
      () => {
        let cert = socket.getPeerCertificate(true);
        // Up to the self-signed root (the chain's last certificate names itself as its issuer).
        for (let i = 0; i < 10 && cert.issuerCertificate && cert.issuerCertificate !== cert && cert.issuerCertificate.raw; i++) cert = cert.issuerCertificate;
        socket.end();
        if (!cert.raw) return reject(new Error(`${server} presented no certificate`));
        resolve(new X509Certificate(cert.raw).toString());
      },
    );
    socket.setTimeout(timeoutMs, () => socket.destroy(new Error(`no TLS answer from ${server} within ${timeoutMs} ms`)));
    socket.on("error", reject);
  });
}
