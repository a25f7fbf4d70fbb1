// NATS over TLS wherever nats-server listens beyond loopback (compose's
// network): a server certificate signed by a CA of the bus's own, and the
// CA certificate every client verifies the server with (CHOREO_NATS_CA).
import { chmod, copyFile, mkdir, mkdtemp, rm, stat, writeFile } from "node:fs/promises";
import { isIP } from "node:net";
import { tmpdir } from "node:os";
import path from "node:path";
import { ensureCa, signCert } from "./client-ca.js";
import { writeSecretFile } from "./secrets.js";

/** The environment variable naming the CA file a NATS client verifies the server with; set: the client speaks TLS only. */
export const NATS_CA_ENV = "CHOREO_NATS_CA";

/** The names a bus server certificate carries by default: compose's service name, and loopback (node agents on the host network, the healthcheck). */
export const BUS_SANS: readonly string[] = ["nats", "localhost", "127.0.0.1"];

/** The files of a TLS-serving nats-server. */
export interface BusTlsFiles {
  /** The server certificate (PEM). */
  certFile: string;
  /** Its key (0600). */
  keyFile: string;
  /** The CA that signed it: what clients verify with. */
  caFile: string;
}

/** `server.crt`, `server.key`, `ca.crt` in `dir`. */
export function busTlsPaths(dir: string): BusTlsFiles {
  return { certFile: path.join(dir, "server.crt"), keyFile: path.join(dir, "server.key"), caFile: path.join(dir, "ca.crt") };
}

const exists = (f: string): Promise<boolean> =>
  stat(f).then(
    () => true,
    () => false,
  );

/** True for 127.0.0.0/8, ::1 and `localhost`: an address only this host reaches. */
export function isLoopbackHost(host: string): boolean {
  if (host === "localhost" || host === "::1") return true;
  return isIP(host) === 4 && host.startsWith("127.");
}

/**
 * The bus's server certificate in `dir` (0700), made once: a fresh CA
 * (EC P-256, the client CA's helper) signs `server.crt` for `sans` (DNS
 * names and IP addresses; serverAuth only, so it is no client certificate
 * anywhere), then its key is deleted — nothing can sign another bus server
 * afterwards. `ca.crt` is what clients trust. Files already there are kept;
 * a missing one makes all three again.
 */
export async function ensureBusTls(dir: string, sans: readonly string[] = BUS_SANS, days = 3650): Promise<BusTlsFiles> {
  const files = busTlsPaths(dir);
  if ((await exists(files.certFile)) && (await exists(files.keyFile)) && (await exists(files.caFile))) return files;
  for (const n of sans) if (!/^[A-Za-z0-9.:-]+$/.test(n)) throw new Error(`"${n}" cannot be a certificate's subject alternative name`);
  await mkdir(dir, { recursive: true, mode: 0o700 });
  await chmod(dir, 0o700);
  const work = await mkdtemp(path.join(tmpdir(), "choreo-bus-ca-"));
  try {
    const ca = await ensureCa({ certFile: path.join(work, "ca.crt"), keyFile: path.join(work, "ca.key") }, "choreo-bus-ca");
    const san = sans.map((n) => (isIP(n) ? `IP:${n}` : `DNS:${n}`)).join(",");
    const { cert, key } = await signCert(
      ca,
      `/CN=${sans[0] ?? "nats"}`,
      ["basicConstraints=critical,CA:FALSE", "keyUsage=critical,digitalSignature", "extendedKeyUsage=serverAuth", `subjectAltName=${san}`],
      days,
    );
    // The key 0600 before anything is in it; the certificates are public.
    writeSecretFile(files.keyFile, key);
    await writeFile(files.certFile, cert, { mode: 0o644 });
    await copyFile(ca.certFile, files.caFile);
    await chmod(files.caFile, 0o644);
  } finally {
    // The CA's key goes with the work directory.
    await rm(work, { recursive: true, force: true });
  }
  return files;
}

/** nats.conf's `tls` block for `files` (as nats-server sees their paths): every client must speak TLS. */
export function natsTlsBlock(files: BusTlsFiles): string {
  for (const f of [files.certFile, files.keyFile, files.caFile]) {
    if (/["\\\n\r]/.test(f)) throw new Error(`refusing path ${JSON.stringify(f)} in a server config`);
  }
  return `tls { cert_file: "${files.certFile}", key_file: "${files.keyFile}", ca_file: "${files.caFile}", timeout: 5 }\n`;
}
