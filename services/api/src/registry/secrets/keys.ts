import { randomBytes } from "node:crypto";
import { chmodSync, closeSync, existsSync, linkSync, mkdirSync, openSync, unlinkSync, writeSync } from "node:fs";
import path from "node:path";
import { readSecretFile } from "@choreo/kit/secrets";

/** One AES-256 key of the encryption-keys file. */
export interface EncryptionKey {
  readonly name: string;
  /** 32 bytes. */
  readonly secret: Buffer;
}

const NAME = /^[A-Za-z0-9][-A-Za-z0-9_.]{0,62}$/;

/**
 * The encryption-keys file: one key a line, `<name>:<base64 of 32 bytes>`,
 * `#` comments; the first key encrypts, every key decrypts. Mode 0600 (a
 * file others may read is refused, like the credentials files).
 */
export function parseEncryptionKeys(text: string, file = "encryption keys"): EncryptionKey[] {
  const keys: EncryptionKey[] = [];
  for (const [i, raw] of text.split("\n").entries()) {
    const line = raw.trim();
    if (line === "" || line.startsWith("#")) continue;
    const at = line.indexOf(":");
    const name = at < 0 ? "" : line.slice(0, at);
    const secret = Buffer.from(line.slice(at + 1), "base64");
    if (!NAME.test(name)) throw new Error(`${file}:${i + 1}: expected <name>:<base64 key>, the name of letters, digits, '-', '_', '.'`);
    if (secret.length !== 32) throw new Error(`${file}:${i + 1}: key "${name}" must be 32 bytes base64 (openssl rand -base64 32), is ${secret.length}`);
    if (keys.some((k) => k.name === name)) throw new Error(`${file}:${i + 1}: key "${name}" appears twice`);
    keys.push({ name, secret });
  }
  if (keys.length === 0) throw new Error(`${file}: no key`);
  return keys;
}

/** A new keys file's content: one random key named `key1`. */
export function newEncryptionKeysFile(): string {
  return [
    "# choreo's Secret encryption keys (AES-256-GCM): <name>:<base64 of 32 bytes>.",
    "# The first key encrypts; every key decrypts. To rotate, put a new key first (keep the old one below).",
    `key1:${randomBytes(32).toString("base64")}`,
    "",
  ].join("\n");
}

/**
 * Reads the keys file, making it (one random key, 0600, directory 0700) when
 * missing: written in full under a temporary name, then linked into place,
 * so that a reader never sees half a file and of two api replicas starting
 * at once, one file wins and both use it.
 */
export function ensureEncryptionKeys(file: string): EncryptionKey[] {
  if (!existsSync(file)) makeKeysFile(file);
  return parseEncryptionKeys(readSecretFile(file), file);
}

function makeKeysFile(file: string): void {
  mkdirSync(path.dirname(file), { recursive: true, mode: 0o700 });
  const tmp = path.join(path.dirname(file), `.${path.basename(file)}.${process.pid}.${randomBytes(4).toString("hex")}.tmp`);
  const fd = openSync(tmp, "wx", 0o600);
  try {
    chmodSync(tmp, 0o600);
    writeSync(fd, newEncryptionKeysFile());
  } finally {
    closeSync(fd);
  }
  try {
    linkSync(tmp, file);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== "EEXIST") throw err;
  } finally {
    unlinkSync(tmp);
  }
}
