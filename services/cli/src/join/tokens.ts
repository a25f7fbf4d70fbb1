// Bootstrap tokens from the client's side (kubeadm's `token` commands): a
// Secret `bootstrap-token-<id>` of type bootstrap.kubernetes.io/token in
// kube-system, written and read through the api as any Secret.
import { randomBytes } from "node:crypto";
import type { RestClient } from "../client.js";

export const TOKEN_TYPE = "bootstrap.kubernetes.io/token";
const SECRETS = "/api/v1/namespaces/kube-system/secrets";
export const TOKEN_PATTERN = /^([a-z0-9]{6})\.([a-z0-9]{16})$/;
const ID_PATTERN = /^[a-z0-9]{6}$/;

const ALPHABET = "abcdefghijklmnopqrstuvwxyz0123456789";
function randomString(n: number): string {
  let out = "";
  while (out.length < n) for (const b of randomBytes(n * 2)) if (b < 252 && out.length < n) out += ALPHABET[b % 36];
  return out;
}

/** A fresh `<6>.<16>` token. */
export function generateToken(): string {
  return `${randomString(6)}.${randomString(16)}`;
}

/** A Go-style duration (`24h`, `1h30m`, `90s`, `0` for never) in ms. */
export function parseDuration(s: string): number {
  if (s === "0") return 0;
  const m = /^(?:(\d+)h)?(?:(\d+)m)?(?:(\d+)s)?$/.exec(s);
  if (!s || !m) throw new Error(`invalid duration "${s}": use e.g. 24h, 1h30m, 90s, or 0 for a token that never expires`);
  return ((Number(m[1] ?? 0) * 60 + Number(m[2] ?? 0)) * 60 + Number(m[3] ?? 0)) * 1000;
}

/** What a token Secret says. */
export interface TokenInfo {
  id: string;
  /** The whole token (`id.secret`). */
  token: string;
  /** ISO time, "" for never. */
  expiration: string;
  usages: string[];
  description: string;
  groups: string[];
}

/** Creates a token (`token` given or generated) valid `ttlMs` (0: never), usable to authenticate and to join. */
export async function createToken(
  client: RestClient,
  o: { token?: string; ttlMs: number; description?: string; groups?: string[]; now?: number },
): Promise<TokenInfo> {
  const token = o.token ?? generateToken();
  const m = TOKEN_PATTERN.exec(token);
  if (!m) throw new Error(`the token "${token}" is not of the form [a-z0-9]{6}.[a-z0-9]{16}`);
  const groups = o.groups ?? ["system:bootstrappers:choreo:default-node-token"];
  for (const g of groups)
    if (!/^system:bootstrappers:[a-z0-9:-]{0,255}[a-z0-9]$/.test(g)) throw new Error(`group "${g}" must match system:bootstrappers:[a-z0-9:-]{0,255}[a-z0-9]`);
  const expiration = o.ttlMs > 0 ? new Date((o.now ?? Date.now()) + o.ttlMs).toISOString().replace(/\.\d{3}Z$/, "Z") : "";
  const data: Record<string, string> = {
    "token-id": m[1]!,
    "token-secret": m[2]!,
    "usage-bootstrap-authentication": "true",
    "usage-bootstrap-signing": "true",
    "auth-extra-groups": groups.join(","),
    ...(expiration ? { expiration } : {}),
    ...(o.description ? { description: o.description } : {}),
  };
  await client.json({
    method: "POST",
    path: SECRETS,
    body: { apiVersion: "v1", kind: "Secret", metadata: { name: `bootstrap-token-${m[1]!}`, namespace: "kube-system" }, type: TOKEN_TYPE, stringData: data },
  });
  return { id: m[1]!, token, expiration, usages: ["authentication", "signing"], description: o.description ?? "", groups };
}

interface SecretJson {
  type?: string;
  data?: Record<string, string>;
}

/** Every bootstrap token. */
export async function listTokens(client: RestClient): Promise<TokenInfo[]> {
  const list = await client.json<{ items?: SecretJson[] }>({ path: SECRETS, query: { fieldSelector: `type=${TOKEN_TYPE}` } });
  const out: TokenInfo[] = [];
  for (const s of list.items ?? []) {
    if (s.type !== TOKEN_TYPE) continue;
    const d = (k: string): string => (s.data?.[k] ? Buffer.from(s.data[k], "base64").toString("utf8") : "");
    const id = d("token-id");
    out.push({
      id,
      token: `${id}.${d("token-secret")}`,
      expiration: d("expiration"),
      usages: Object.keys(s.data ?? {})
        .filter((k) => k.startsWith("usage-bootstrap-") && d(k) === "true")
        .map((k) => k.slice("usage-bootstrap-".length)),
      description: d("description"),
      groups: d("auth-extra-groups").split(",").filter(Boolean),
    });
  }
  return out;
}

/** Deletes a token by its id or whole token. */
export async function deleteToken(client: RestClient, idOrToken: string): Promise<string> {
  const id = TOKEN_PATTERN.exec(idOrToken)?.[1] ?? idOrToken;
  if (!ID_PATTERN.test(id)) throw new Error(`"${idOrToken}" is neither a token id ([a-z0-9]{6}) nor a token`);
  await client.json({ method: "DELETE", path: `${SECRETS}/bootstrap-token-${id}` });
  return id;
}
