// The gateway's self-signed serving certificate, made once with openssl.
import { execFile } from "node:child_process";
import { access, chmod, mkdir, readFile, rename } from "node:fs/promises";
import { isIP } from "node:net";
import path from "node:path";
import { promisify } from "node:util";

const run = promisify(execFile);

/** The serving certificate and where it lives. Self-signed: `caPem` is the certificate itself. */
export interface ServingCert {
  certFile: string;
  keyFile: string;
  caPem: string;
  cert: string;
  key: string;
}

const exists = (f: string) =>
  access(f).then(
    () => true,
    () => false,
  );

/**
 * Creates `DIR/pki/apiserver.crt` and `.key` once (self-signed, 10 years,
 * SANs for 127.0.0.1, localhost and `hosts`) with the openssl CLI; reuses them afterwards.
 */
export async function ensureServingCert(dir: string, hosts: string[] = []): Promise<ServingCert> {
  const pki = path.join(dir, "pki");
  const certFile = path.join(pki, "apiserver.crt");
  const keyFile = path.join(pki, "apiserver.key");
  if (!(await exists(certFile)) || !(await exists(keyFile))) {
    await mkdir(pki, { recursive: true, mode: 0o700 });
    const names = [...new Set(["127.0.0.1", "localhost", ...hosts.filter((h) => h && h !== "0.0.0.0" && h !== "::")])];
    const san = names.map((h) => (isIP(h) ? `IP:${h}` : `DNS:${h}`)).join(",");
    const tmpKey = `${keyFile}.${process.pid}.tmp`;
    const tmpCert = `${certFile}.${process.pid}.tmp`;
    await run("openssl", [
      "req",
      "-x509",
      "-newkey",
      "ec",
      "-pkeyopt",
      "ec_paramgen_curve:prime256v1",
      "-nodes",
      "-days",
      "3650",
      "-subj",
      "/CN=choreo-apiserver",
      "-addext",
      `subjectAltName=${san}`,
      "-addext",
      "basicConstraints=critical,CA:TRUE",
      "-addext",
      "keyUsage=critical,digitalSignature,keyEncipherment,keyCertSign",
      "-addext",
      "extendedKeyUsage=serverAuth",
      "-keyout",
      tmpKey,
      "-out",
      tmpCert,
    ]);
    // Key first, then the certificate: a certificate on disk always has its key.
    await chmod(tmpKey, 0o600);
    await rename(tmpKey, keyFile);
    await rename(tmpCert, certFile);
  }
  const [cert, key] = await Promise.all([readFile(certFile, "utf8"), readFile(keyFile, "utf8")]);
  return { certFile, keyFile, caPem: cert, cert, key };
}
