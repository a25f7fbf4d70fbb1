import { randomBytes } from "node:crypto";
import { existsSync, mkdirSync, readFileSync, writeFileSync } from "node:fs";
import path from "node:path";

/** The accepted bearer tokens: one per line in `file`, created with a random token when missing. */
export function loadTokens(file: string): string[] {
  if (!existsSync(file)) {
    mkdirSync(path.dirname(file), { recursive: true });
    writeFileSync(file, `${randomBytes(24).toString("base64url")}\n`, { mode: 0o600 });
  }
  const tokens = readFileSync(file, "utf8")
    .split("\n")
    .map((l) => l.trim())
    .filter((l) => l && !l.startsWith("#"));
  if (tokens.length === 0) throw new Error(`token file ${file} holds no token`);
  return tokens;
}
