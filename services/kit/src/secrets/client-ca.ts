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

/** A CA's certificate and key files. */
export interface CaFiles {
  certFile: string;
  keyFile: string;
}

/** Creates a CA (`certFile`, `keyFile` 0600; EC P-256, 10 years, subject CN=`cn`) once; reads it afterwards. */
export async function ensureCa(files: CaFiles, cn: string): Promise<ClientCa> {
  const { certFile, keyFile } = files;
  if (!(await exists(certFile)) || !(await exists(keyFile))) {
    await mkdir(path.dirname(certFile), { recursive: true, mode: 0o700 });
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
      `/CN=${cn}`,
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

/** Creates `pki/client-ca.crt` and `.key` (0600) once (EC P-256, 10 years); reads them afterwards. */
export function ensureClientCa(pki: string): Promise<ClientCa> {
  return ensureCa(clientCaPaths(pki), "choreo-client-ca");
}

/**
 * Signs a certificate for `subject` (`/CN=…/O=…`) with `ca`: a fresh EC
 * P-256 key, the X.509 v3 `extensions` (openssl extfile lines), `days`
 * valid. Returns both PEMs; nothing stays on disk.
 */
export async function signCert(ca: CaFiles, subject: string, extensions: readonly string[], days: number): Promise<{ cert: string; key: string }> {
  const dir = await mkdtemp(path.join(tmpdir(), "choreo-cert-"));
  try {
    const key = path.join(dir, "key.pem");
    const csr = path.join(dir, "req.csr");
    const crt = path.join(dir, "cert.pem");
    await run("openssl", ["req", "-new", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes", "-subj", subject, "-keyout", key, "-out", csr]);
    const ext = path.join(dir, "ext.cnf");
    await writeFile(ext, `${extensions.join("\n")}\n`);
    await run("openssl", [
      "x509",
      "-req",
      "-in",
      csr,
      "-CA",
      ca.certFile,
      "-CAkey",
      ca.keyFile,
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
  const ca = clientCaPaths(pki);
  if (!(await exists(ca.keyFile))) throw new Error(`no client CA in ${pki} (the api makes it at its first start)`);
  const subject = `/CN=${user}${groups.map((g) => `/O=${g}`).join("")}`;
  return signCert(ca, subject, ["basicConstraints=critical,CA:FALSE", "keyUsage=critical,digitalSignature", "extendedKeyUsage=clientAuth"], days);
}
