// The static token file: Kubernetes' `--token-auth-file` format, one user per
// line, plus choreo's original one-token-per-line form.
import { hash, randomBytes } from "node:crypto";
import { existsSync, mkdirSync, readFileSync, writeFileSync } from "node:fs";
import path from "node:path";
import { AUTHENTICATED, MASTERS, type UserInfo } from "./types.js";

/** Who a bare token (a line without commas, as `choreo up` has always written) is: the cluster's administrator. */
export const LEGACY_ADMIN: Omit<UserInfo, "extra"> = { name: "admin", uid: "admin", groups: [MASTERS] };

/** The legacy administrator as a UserInfo (system:masters, system:authenticated). */
export function legacyAdmin(): UserInfo {
  return { ...LEGACY_ADMIN, groups: [...LEGACY_ADMIN.groups, AUTHENTICATED], extra: {} };
}

/** Something that knows who a bearer token belongs to. */
export interface TokenAuthenticator {
  /** The user, or undefined when this authenticator does not know the token. */
  authenticateToken(token: string, audiences?: readonly string[]): UserInfo | undefined | Promise<UserInfo | undefined>;
}

/** A token's SHA-256 in base64: crypto's one-shot hash, ~4× cheaper than a createHash object (a stream) per request. */
function digest(s: string): string {
  return hash("sha256", s, "base64");
}

/**
 * Splits one CSV line as Go's encoding/csv reads the token file:
 * fields separated by commas, a field in double quotes may hold commas, `""` is a quote.
 */
export function csvFields(line: string): string[] {
  const out: string[] = [];
  let i = 0;
  while (i <= line.length) {
    if (line[i] === '"') {
      let v = "";
      i++;
      while (i < line.length) {
        if (line[i] === '"' && line[i + 1] === '"') {
          v += '"';
          i += 2;
        } else if (line[i] === '"') {
          i++;
          break;
        } else v += line[i++];
      }
      out.push(v);
      i = line.indexOf(",", i) === -1 ? line.length + 1 : line.indexOf(",", i) + 1;
    } else {
      const end = line.indexOf(",", i);
      out.push(line.slice(i, end === -1 ? line.length : end).trim());
      i = end === -1 ? line.length + 1 : end + 1;
    }
  }
  return out;
}

/**
 * Parses a token file: `token,user,uid[,"group1,group2"]` per line (blank
 * lines and `#` comments skipped), or a bare token (the legacy admin).
 * Throws naming the line for a line it cannot read; a duplicate token is an error.
 */
export function parseTokenFile(text: string, file = "token file"): { token: string; user: UserInfo }[] {
  const out: { token: string; user: UserInfo }[] = [];
  const seen = new Set<string>();
  text.split("\n").forEach((raw, i) => {
    const line = raw.trim();
    if (!line || line.startsWith("#")) return;
    let token: string;
    let user: UserInfo;
    if (!line.includes(",")) {
      token = line;
      user = legacyAdmin();
    } else {
      const [t = "", name = "", uid = "", groups = ""] = csvFields(line);
      if (!t || !name) throw new Error(`${file}:${i + 1}: a line is token,user,uid[,"groups"]: token and user are required`);
      token = t;
      const gs = groups
        .split(",")
        .map((g) => g.trim())
        .filter(Boolean);
      user = { name, uid: uid || name, groups: [...new Set([...gs, AUTHENTICATED])], extra: {} };
    }
    if (seen.has(token)) throw new Error(`${file}:${i + 1}: a token appears twice`);
    seen.add(token);
    out.push({ token, user });
  });
  return out;
}

/**
 * Tokens from a file, found by their SHA-256: a map keyed by the digest,
 * whose lookup takes the same time whatever the number of lines (the loop
 * comparing the digest with every line's in constant time grew with them)
 * and, like that loop, tells nothing of how near a wrong token is to a known
 * one — what the lookup's time depends on is the digest, not the token.
 */
export class StaticTokens implements TokenAuthenticator {
  /** By the token's digest. */
  private readonly entries = new Map<string, UserInfo>();

  constructor(entries: { token: string; user: UserInfo }[]) {
    // A token given twice (not from a file, which refuses it) keeps its last user, as the loop over every line did.
    for (const e of entries) this.entries.set(digest(e.token), e.user);
  }

  /** Reads `file`, creating it (0600) with one random admin token when it is missing. */
  static load(file: string): StaticTokens {
    if (!existsSync(file)) {
      mkdirSync(path.dirname(file), { recursive: true });
      writeFileSync(file, `${randomBytes(24).toString("base64url")}\n`, { mode: 0o600 });
    }
    const entries = parseTokenFile(readFileSync(file, "utf8"), file);
    if (entries.length === 0) throw new Error(`token file ${file} holds no token`);
    return new StaticTokens(entries);
  }

  get size(): number {
    return this.entries.size;
  }

  authenticateToken(token: string): UserInfo | undefined {
    return this.entries.get(digest(token));
  }
}
