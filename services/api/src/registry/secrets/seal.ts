import { createCipheriv, createDecipheriv, randomBytes } from "node:crypto";
import { emptyMeta, internal } from "@choreo/kit";
import { Secret } from "@choreo/kit/gen/choreo/core/v1/core";
import type { EncryptionKey } from "./keys.js";

/** Kubernetes' aesgcm transformer prefix; the key's name and a colon follow. */
export const SEAL_PREFIX = "k8s:enc:aesgcm:v1:";
/** The one data key of a sealed Secret (a colon: never a valid data key). */
export const SEALED_DATA_KEY = "k8s:enc";
const NONCE_BYTES = 12;

/** One seal or unseal, for metrics: the key used (or named), and whether it worked. */
export type TransformObserver = (operation: "seal" | "unseal", key: string, ok: boolean) => void;
const TAG_BYTES = 16;

/**
 * Encryption at rest of Secrets (Kubernetes' EncryptionConfiguration with
 * the aesgcm provider): what reaches Redis and the event log is a *sealed*
 * Secret — the whole object, encoded, AES-256-GCM encrypted under the first
 * key with a fresh 12-byte nonce, the object's `secrets/<ns>/<name>` as
 * additional data (a sealed value pasted under another name does not open)
 * — inside a shell that keeps only what storage, selection and the garbage
 * collector read: name, namespace, uid, labels, finalizers, owners, times,
 * type and immutable. Annotations (kubectl's last-applied configuration
 * holds the data) and managedFields (the data's key names) are sealed with
 * the rest. Every key opens what it sealed (rotation); an unsealed Secret
 * (written before encryption) reads as it is.
 */
export class SecretSealer {
  private readonly byName: Map<string, Buffer>;
  private readonly first: EncryptionKey;

  constructor(
    keys: readonly EncryptionKey[],
    private readonly observe: TransformObserver = () => undefined,
  ) {
    const first = keys[0];
    if (!first) throw new Error("no encryption key");
    this.first = first;
    this.byName = new Map(keys.map((k) => [k.name, k.secret]));
  }

  /** The name of the key new writes are sealed with. */
  get writeKey(): string {
    return this.first.name;
  }

  /** The stored form of a Secret. */
  seal(s: Secret): Secret {
    const meta = s.metadata ?? emptyMeta();
    const nonce = randomBytes(NONCE_BYTES);
    const cipher = createCipheriv("aes-256-gcm", this.first.secret, nonce);
    cipher.setAAD(additionalData(meta.namespace, meta.name));
    const body = Buffer.concat([cipher.update(Secret.encode(s).finish()), cipher.final()]);
    const sealed = Buffer.concat([Buffer.from(`${SEAL_PREFIX}${this.first.name}:`), nonce, body, cipher.getAuthTag()]);
    this.observe("seal", this.first.name, true);
    return {
      apiVersion: s.apiVersion,
      kind: s.kind,
      metadata: { ...meta, annotations: {}, managedFields: [] },
      immutable: s.immutable,
      type: s.type,
      data: { [SEALED_DATA_KEY]: sealed },
      stringData: {},
    };
  }

  /** The Secret a stored form holds; a 500 InternalError when no key opens it. */
  unseal(stored: Secret): Secret {
    const sealed = stored.data[SEALED_DATA_KEY];
    if (!sealed || !isSealed(stored)) return stored;
    const meta = stored.metadata ?? emptyMeta();
    const where = `secrets/${meta.namespace}/${meta.name}`;
    const text = Buffer.from(sealed.subarray(0, Math.min(sealed.length, 256))).toString("latin1");
    if (!text.startsWith(SEAL_PREFIX)) throw internal(`${where} is stored in an unknown form`);
    const colon = text.indexOf(":", SEAL_PREFIX.length);
    const name = colon < 0 ? "" : text.slice(SEAL_PREFIX.length, colon);
    const key = this.byName.get(name);
    const fail = (why: string): never => {
      this.observe("unseal", name, false);
      throw internal(`${where} ${why}`);
    };
    if (!key) return fail(`is encrypted with key "${name}", which is not among the api's encryption keys (CHOREO_ENCRYPTION_KEYS_FILE)`);
    const rest = sealed.subarray(colon + 1);
    if (rest.length < NONCE_BYTES + TAG_BYTES) return fail("holds a truncated encrypted value");
    const decipher = createDecipheriv("aes-256-gcm", key, rest.subarray(0, NONCE_BYTES));
    decipher.setAAD(additionalData(meta.namespace, meta.name));
    decipher.setAuthTag(rest.subarray(rest.length - TAG_BYTES));
    let plain: Buffer;
    try {
      plain = Buffer.concat([decipher.update(rest.subarray(NONCE_BYTES, rest.length - TAG_BYTES)), decipher.final()]);
    } catch {
      return fail(`does not decrypt with key "${name}": the key is not the one it was encrypted with, or the stored value was altered`);
    }
    this.observe("unseal", name, true);
    const s = Secret.decode(plain);
    s.metadata ??= emptyMeta();
    // What the shell carries is current: the revision is set by whoever decodes.
    s.metadata.resourceVersion = meta.resourceVersion;
    return s;
  }
}

/** Whether a Secret is in its stored (sealed) form. */
export function isSealed(s: Secret): boolean {
  const keys = Object.keys(s.data);
  return keys.length === 1 && keys[0] === SEALED_DATA_KEY;
}

function additionalData(namespace: string, name: string): Buffer {
  return Buffer.from(`secrets/${namespace}/${name}`);
}
