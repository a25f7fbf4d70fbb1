// The cluster's client CA: the api trusts client certificates it signed
// (CN the user, each O a group, as Kubernetes' x509 authenticator), and
// `choreo kubeconfig create` signs them. Made once with the openssl CLI.
import { execFile } from "node:child_process";
import { randomBytes } from "node:crypto";
import { chmod, mkdir, mkdtemp, readFile, rename, rm, stat, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";
import { promisify } from "node:util";

const run = promisify(execFile);

export interface ClientCa {
  certFile: string;
  keyFile: string;
  /** The CA certificate (PEM): what the api's TLS server verifies client certificates against. */
  pem: string;
}

const exists = (f: string): Promise<boolean> =>
  stat(f).then(
    () => true,
    () => false,
  );

/** The files of the client CA in a pki directory. */
export function clientCaPaths(pki: string): { certFile: string; keyFile: string } {
  return { certFile: path.join(pki, "client-ca.crt"), keyFile: path.join(pki, "client-ca.key") };
}

/** Creates `pki/client-ca.crt` and `.key` (0600) once (EC P-256, 10 years); reads them afterwards. */
export async function ensureClientCa(pki: string): Promise<ClientCa> {
  const { certFile, keyFile } = clientCaPaths(pki);
  if (!(await exists(certFile)) || !(await exists(keyFile))) {
    await mkdir(pki, { recursive: true, mode: 0o700 });
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
      "/CN=choreo-client-ca",
      "-addext",
      "basicConstraints=critical,CA:TRUE",
      "-addext",
      "keyUsage=critical,keyCertSign,cRLSign",
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
  return { certFile, keyFile, pem: await readFile(certFile, "utf8") };
}

/** User and group names a certificate may carry: no characters that would need escaping in a subject. */
const NAME = /^[A-Za-z0-9][A-Za-z0-9:._@-]{0,252}$/;

/**
 * Signs a client certificate for `user` in `groups` with the CA in `pki`
 * (a fresh EC key; `days` valid, 365 by default). Throws for a name a
 * subject cannot carry plainly.
 */
export async function signClientCert(pki: string, user: string, groups: readonly string[], days = 365): Promise<{ cert: string; key: string }> {
  for (const n of [user, ...groups]) {
    if (!NAME.test(n)) throw new Error(`"${n}" cannot be a certificate's user or group: use letters, digits and : . _ @ - (at most 253)`);
  }
  const { certFile, keyFile } = clientCaPaths(pki);
  if (!(await exists(keyFile))) throw new Error(`no client CA in ${pki} (the api makes it at its first start)`);
  const dir = await mkdtemp(path.join(tmpdir(), "choreo-cert-"));
  try {
    const key = path.join(dir, "key.pem");
    const csr = path.join(dir, "req.csr");
    const crt = path.join(dir, "cert.pem");
    const subject = `/CN=${user}${groups.map((g) => `/O=${g}`).join("")}`;
    await run("openssl", ["req", "-new", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes", "-subj", subject, "-keyout", key, "-out", csr]);
    const ext = path.join(dir, "ext.cnf");
    await writeFile(ext, "basicConstraints=critical,CA:FALSE\nkeyUsage=critical,digitalSignature\nextendedKeyUsage=clientAuth\n");
    await run("openssl", [
      "x509",
      "-req",
      "-in",
      csr,
      "-CA",
      certFile,
      "-CAkey",
      keyFile,
      "-set_serial",
      `0x${randomBytes(16).toString("hex")}`,
      "-days",
      String(days),
      "-extfile",
      ext,
      "-out",
      crt,
    ]);
    return { cert: await readFile(crt, "utf8"), key: await readFile(key, "utf8") };
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
}
