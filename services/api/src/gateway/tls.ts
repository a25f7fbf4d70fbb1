import { execFileSync } from "node:child_process";
import { existsSync, mkdirSync, readFileSync } from "node:fs";
import path from "node:path";

/** The serving certificate of the gateway. */
export interface ServingCert {
  certFile: string;
  keyFile: string;
  cert: string;
  key: string;
  /** Self-signed: the certificate is its own CA. */
  caPem: string;
}

/**
 * Creates `pki/apiserver.crt` and `.key` under `dir` once (self-signed,
 * 10 years, SANs for localhost, 127.0.0.1 and `hosts`) and reuses them.
 */
export function ensureServingCert(dir: string, hosts: string[] = []): ServingCert {
  const pki = path.join(dir, "pki");
  const certFile = path.join(pki, "apiserver.crt");
  const keyFile = path.join(pki, "apiserver.key");
  if (!existsSync(certFile) || !existsSync(keyFile)) {
    mkdirSync(pki, { recursive: true, mode: 0o700 });
    const names = new Set(["localhost", "127.0.0.1", ...hosts.filter(Boolean)]);
    const san = [...names].map((h) => (/^\d+\.\d+\.\d+\.\d+$/.test(h) ? `IP:${h}` : `DNS:${h}`)).join(",");
    execFileSync("openssl", [
      "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes", "-days", "3650",
      "-subj", "/CN=choreo-apiserver", "-addext", `subjectAltName=${san}`, "-addext", "basicConstraints=critical,CA:TRUE",
      "-keyout", keyFile, "-out", certFile,
    ], { stdio: "pipe" });
  }
  const cert = readFileSync(certFile, "utf8");
  return { certFile, keyFile, cert, key: readFileSync(keyFile, "utf8"), caPem: cert };
}
