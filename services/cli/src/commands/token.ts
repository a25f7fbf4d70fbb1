// `choreo token create|list|delete`: bootstrap tokens, as kubeadm's. A token
// lets `choreo join` on another machine exchange it for a node credential
// until it expires (the api deletes expired tokens).
import { CliError } from "../client.js";
import { caCertHash } from "../join/ca-hash.js";
import { createToken, deleteToken, listTokens, parseDuration } from "../join/tokens.js";
import { GLOBAL_OPTIONS, Session, parseFlags, type CliIo, type Command } from "../session.js";

const OPTIONS = {
  ...GLOBAL_OPTIONS,
  ttl: { type: "string" },
  description: { type: "string" },
  groups: { type: "string" },
  "print-join-command": { type: "boolean" },
} as const;

const USAGE = `Manage bootstrap tokens (the credentials of choreo join).

Usage:
  choreo token create [TOKEN] [--ttl 24h] [--description TEXT] [--groups system:bootstrappers:...] [--print-join-command]
  choreo token list
  choreo token delete TOKEN_ID|TOKEN...

A token is [a-z0-9]{6}.[a-z0-9]{16} (generated when not given); --ttl 0 never expires.
--print-join-command prints the whole choreo join command instead (the server and the CA hash
from the kubeconfig).
Stored as the Secret kube-system/bootstrap-token-<id> (type bootstrap.kubernetes.io/token).`;

function ttlText(expiration: string, now: number): string {
  if (!expiration) return "<forever>";
  const left = Date.parse(expiration) - now;
  if (Number.isNaN(left)) return "<invalid>";
  if (left <= 0) return "<expired>";
  const h = Math.floor(left / 3_600_000);
  return h >= 1 ? `${h}h` : `${Math.max(1, Math.floor(left / 60_000))}m`;
}

async function runToken(argv: string[], io: CliIo): Promise<number> {
  const { values, positionals } = parseFlags(argv, OPTIONS);
  const s = new Session(io, values);
  const [verb, ...rest] = positionals;
  if (values.help || !verb) {
    s.out(USAGE);
    return values.help ? 0 : 1;
  }
  try {
    switch (verb) {
      case "create": {
        if (rest.length > 1) throw new CliError("error: at most one TOKEN: choreo token create [TOKEN]");
        const t = await createToken(s.client, {
          ...(rest[0] ? { token: rest[0] } : {}),
          ttlMs: parseDuration(values.ttl ?? "24h"),
          ...(values.description ? { description: values.description } : {}),
          ...(values.groups ? { groups: values.groups.split(",") } : {}),
        });
        if (!values["print-join-command"]) {
          s.out(t.token);
          return 0;
        }
        const ca = s.conn.ca;
        if (!ca) throw new CliError("error: --print-join-command needs the cluster's CA in the kubeconfig (certificate-authority-data)");
        s.out(`choreo join --server ${s.conn.server} --token ${t.token} --ca-hash ${caCertHash(ca)}`);
        return 0;
      }
      case "list": {
        const now = Date.now();
        const rows = [["TOKEN", "TTL", "EXPIRES", "USAGES", "DESCRIPTION", "EXTRA GROUPS"]];
        for (const t of await listTokens(s.client))
          rows.push([
            t.token,
            ttlText(t.expiration, now),
            t.expiration || "<never>",
            t.usages.join(",") || "<none>",
            t.description || "<none>",
            t.groups.join(","),
          ]);
        const widths = rows[0]!.map((_, i) => Math.max(...rows.map((r) => r[i]!.length)) + 3);
        for (const r of rows) s.out(r.map((c, i) => (i === r.length - 1 ? c : c.padEnd(widths[i]!))).join(""));
        return 0;
      }
      case "delete": {
        if (rest.length === 0) throw new CliError("error: missing TOKEN_ID or TOKEN: choreo token delete TOKEN_ID");
        for (const x of rest) s.out(`bootstrap token "${await deleteToken(s.client, x)}" deleted`);
        return 0;
      }
      default:
        throw new CliError(`error: unknown command "${verb}" for "choreo token" (create, list, delete)`);
    }
  } catch (err) {
    if (err instanceof Error && !(err instanceof CliError) && err.constructor === Error) throw new CliError(`error: ${err.message}`);
    throw err;
  }
}

export const tokenCommand: Command = { name: "token", summary: "Create, list and delete bootstrap tokens (choreo join)", run: runToken };
