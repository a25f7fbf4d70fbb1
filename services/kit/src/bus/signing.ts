// Signed events: the api's relay signs every event-log message with an
// Ed25519 key only the api holds; a process that must not act on forged
// events (a node agent runs what pod events tell it) verifies each message
// against the public key before decoding it. The signature covers the
// message bytes, which carry the revision, and a verified message must sit
// at the stream sequence equal to that revision (invariant 2): a replayed
// copy of a genuine message lands at another sequence and is refused too.
import { createPrivateKey, createPublicKey, generateKeyPairSync, sign, verify, type KeyObject } from "node:crypto";
import { closeSync, existsSync, mkdirSync, openSync, readFileSync, renameSync, writeSync } from "node:fs";
import path from "node:path";
import type { NatsConnection } from "@nats-io/transport-node";

/** The header that carries an event's signature (base64 of the Ed25519 signature of the message data). */
export const EVENT_SIGNATURE_HEADER = "Choreo-Signature";

/** Signs event-log messages (the api's relay). */
export class EventSigner {
  constructor(private readonly key: KeyObject) {
    if (key.asymmetricKeyType !== "ed25519" || key.type !== "private") throw new Error("event signing needs an Ed25519 private key");
  }

  /** The signature of `data`, for the {@link EVENT_SIGNATURE_HEADER} header. */
  sign(data: Uint8Array): string {
    return sign(null, data, this.key).toString("base64");
  }

  /** The verifier of this key's signatures (its public key). */
  verifier(): EventVerifier {
    return new EventVerifier(createPublicKey(this.key));
  }

  /** {@link sign} on libuv's thread pool: a batch of signatures off the event loop, in parallel. */
  signAsync(data: Uint8Array): Promise<string> {
    return new Promise((resolve, reject) => sign(null, data, this.key, (err, sig) => (err ? reject(err) : resolve(sig.toString("base64")))));
  }
}

/** Checks event-log messages against the api's public key. */
export class EventVerifier {
  constructor(private readonly key: KeyObject) {
    if (key.asymmetricKeyType !== "ed25519") throw new Error("event verification needs an Ed25519 public key");
  }

  /** Whether `signature` (base64, possibly missing) is the api's signature of `data`. */
  verify(data: Uint8Array, signature: string | undefined): boolean {
    if (!signature || signature.length > 128) return false;
    try {
      return verify(null, data, this.key, Buffer.from(signature, "base64"));
    } catch {
      return false;
    }
  }
}

/** Where a data dir keeps the event-signing key pair. */
export function eventKeyPaths(dir: string): { privateKey: string; publicKey: string } {
  return { privateKey: path.join(dir, "event-signing.key"), publicKey: path.join(dir, "event-signing.pub") };
}

/**
 * The event-signing key pair in `dir`, made when missing: the private key
 * mode 0600, the public key 0644 (node agents read it). Several api
 * replicas sharing `dir` may start at once: the file is created exclusively
 * and a replica that loses the race reads the winner's key.
 */
export function ensureEventKeys(dir: string): { privateKey: string; publicKey: string } {
  const paths = eventKeyPaths(dir);
  mkdirSync(dir, { recursive: true, mode: 0o700 });
  if (!existsSync(paths.privateKey)) {
    const pair = generateKeyPairSync("ed25519");
    const pem = pair.privateKey.export({ type: "pkcs8", format: "pem" }).toString();
    try {
      const fd = openSync(paths.privateKey, "wx", 0o600);
      try {
        writeSync(fd, pem);
      } finally {
        closeSync(fd);
      }
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== "EEXIST") throw err;
    }
  }
  const pub = createPublicKey(readPrivateKey(paths.privateKey)).export({ type: "spki", format: "pem" }).toString();
  if (!existsSync(paths.publicKey) || readFileSync(paths.publicKey, "utf8") !== pub) writePublic(paths.publicKey, pub);
  return paths;
}

function writePublic(file: string, pem: string): void {
  const tmp = `${file}.${process.pid}.tmp`;
  const fd = openSync(tmp, "w", 0o644);
  try {
    writeSync(fd, pem);
  } finally {
    closeSync(fd);
  }
  // rename is atomic: a reader never sees half a key.
  renameSync(tmp, file);
}

function readPrivateKey(file: string): KeyObject {
  return createPrivateKey(readFileSync(file));
}

/** The signer for the private key in `file` (PEM). */
export function loadEventSigner(file: string): EventSigner {
  return new EventSigner(readPrivateKey(file));
}

/** The verifier for the public key in `file` (PEM), or for the PEM text itself. */
export function loadEventVerifier(fileOrPem: string): EventVerifier {
  const pem = fileOrPem.includes("-----BEGIN") ? fileOrPem : readFileSync(fileOrPem, "utf8");
  return new EventVerifier(createPublicKey(pem));
}

/** What a connection that requires signed events does with a message that is not. */
export interface SignedEventsPolicy {
  verifier: EventVerifier;
  /** Called for every refused message (it is skipped). */
  onRejected?: (why: "unsigned" | "bad-signature" | "out-of-place", subject: string, sequence: number) => void;
}

const policies = new WeakMap<NatsConnection, SignedEventsPolicy>();

/**
 * From now on every event consumed through `nc` (informers, `consumeEvents`)
 * must carry the api's signature and sit at the sequence of its revision;
 * others are skipped and reported. A node agent calls this once after
 * connecting: a forged pod event on the bus then runs nothing.
 */
export function requireSignedEvents(nc: NatsConnection, policy: SignedEventsPolicy): void {
  policies.set(nc, policy);
}

/** The signed-events policy of `nc`, if it has one. */
export function signedEventsPolicy(nc: NatsConnection): SignedEventsPolicy | undefined {
  return policies.get(nc);
}
