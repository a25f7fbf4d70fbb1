// A joined node's bus credential as the cluster keeps it: a Secret in
// kube-system, shared by every api replica as bootstrap tokens are
// (auth/bootstrap-tokens.ts), holding only the SHA-256 of the token.
//
//   Secret kube-system/node-credential-<node>   type choreo.dev/node-credential
//     data: node-name    <node>
//           user         system:node:<node>
//           groups       system:nodes
//           token-sha256 hex SHA-256 of the whole token
//
//   token: choreo-node.<node>.<43 base64url characters (32 random bytes)>
//
// The token names its node, as a bootstrap token names its id: a replica
// finds the Secret by name and compares digests in constant time; the
// token itself is never stored.
import { hash, randomBytes } from "node:crypto";
import { fromKubeJson } from "@choreo/kit/kube-json";
import type { Object as ApiObject } from "@choreo/kit/gen/choreo/api/v1/api";
import type { Secret } from "@choreo/kit/gen/choreo/core/v1/core";
import { nodeIdentity } from "@choreo/kit/secrets";

export const NODE_CREDENTIAL_TYPE = "choreo.dev/node-credential";
export const NODE_CREDENTIAL_NAMESPACE = "kube-system";
export const NODE_CREDENTIAL_PREFIX = "node-credential-";
export const NODE_TOKEN_PREFIX = "choreo-node.";

/** The keys of a node credential Secret's data. */
export const CredentialKey = {
  node: "node-name",
  user: "user",
  groups: "groups",
  tokenHash: "token-sha256",
} as const;

/** A node name as Kubernetes takes it (DNS-1123 subdomain). */
const NODE_NAME = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$/;
/** The longest node name whose Secret name (prefix + name) is still a valid object name (253). */
export const MAX_JOIN_NODE_NAME = 253 - NODE_CREDENTIAL_PREFIX.length;
const SECRET_PART = /^[A-Za-z0-9_-]{43}$/;

/** Whether `name` is a node name a credential can be issued for. */
export function isJoinableNodeName(name: unknown): name is string {
  return typeof name === "string" && name.length <= MAX_JOIN_NODE_NAME && NODE_NAME.test(name);
}

export function credentialSecretName(node: string): string {
  return `${NODE_CREDENTIAL_PREFIX}${node}`;
}

/** A fresh token of `node`. */
export function newNodeToken(node: string): string {
  return `${NODE_TOKEN_PREFIX}${node}.${randomBytes(32).toString("base64url")}`;
}

/** The node a token of this form names, else undefined (another authenticator's token). */
export function nodeOfToken(token: string): string | undefined {
  if (!token.startsWith(NODE_TOKEN_PREFIX)) return undefined;
  const dot = token.lastIndexOf(".");
  const node = token.slice(NODE_TOKEN_PREFIX.length, dot);
  if (dot <= NODE_TOKEN_PREFIX.length || !SECRET_PART.test(token.slice(dot + 1)) || !isJoinableNodeName(node)) return undefined;
  return node;
}

/** The SHA-256 of a token (what the Secret keeps, hex). */
export function tokenDigest(token: string): Buffer {
  return hash("sha256", token, "buffer");
}

/** The Secret recording `token` as node `node`'s credential (`resourceVersion` set for an update). */
export function credentialSecret(node: string, token: string, resourceVersion?: string): ApiObject {
  const id = nodeIdentity(node);
  return fromKubeJson({
    apiVersion: "v1",
    kind: "Secret",
    metadata: {
      name: credentialSecretName(node),
      namespace: NODE_CREDENTIAL_NAMESPACE,
      ...(resourceVersion ? { resourceVersion } : {}),
    },
    type: NODE_CREDENTIAL_TYPE,
    stringData: {
      [CredentialKey.node]: node,
      [CredentialKey.user]: id.user,
      [CredentialKey.groups]: id.groups.join(","),
      [CredentialKey.tokenHash]: tokenDigest(token).toString("hex"),
    },
  });
}

function dataString(s: Secret, key: string): string {
  const v = s.data?.[key];
  return v ? Buffer.from(v).toString("utf8") : "";
}

/** Why a Secret is no credential (for the log). */
export type CredentialDefect = "wrong-type" | "wrong-namespace" | "wrong-name" | "wrong-identity" | "bad-digest" | "deleting";

/**
 * The node and digest a credential Secret records, or the reason it is none:
 * its type, namespace, a name matching its node, exactly the node's user and
 * groups (a Secret cannot make its token anyone else), a 64-hex digest, and
 * not being deleted.
 */
export function readCredentialSecret(s: Secret): { node: string; digest: Buffer } | { defect: CredentialDefect } {
  if (s.type !== NODE_CREDENTIAL_TYPE) return { defect: "wrong-type" };
  if (s.metadata?.namespace !== NODE_CREDENTIAL_NAMESPACE) return { defect: "wrong-namespace" };
  if (s.metadata?.deletionTimestamp) return { defect: "deleting" };
  const node = dataString(s, CredentialKey.node);
  if (!isJoinableNodeName(node) || s.metadata?.name !== credentialSecretName(node)) return { defect: "wrong-name" };
  const id = nodeIdentity(node);
  if (dataString(s, CredentialKey.user) !== id.user || dataString(s, CredentialKey.groups) !== id.groups.join(",")) return { defect: "wrong-identity" };
  const hex = dataString(s, CredentialKey.tokenHash);
  if (!/^[0-9a-f]{64}$/.test(hex)) return { defect: "bad-digest" };
  return { node, digest: Buffer.from(hex, "hex") };
}
