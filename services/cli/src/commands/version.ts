// `choreo version`: the client's version and the server's /version.
import { readFileSync } from "node:fs";
import { CliError } from "../client.js";
import { formatJson, formatYaml } from "../printers.js";
import { GLOBAL_OPTIONS, Session, parseFlags, type CliIo, type Command } from "../session.js";

const OPTIONS = { ...GLOBAL_OPTIONS, client: { type: "boolean" }, output: { type: "string", short: "o" } } as const;

const USAGE = `Print the client and server version information.

Usage: choreo version [--client] [-o json|yaml]`;

/** The CLI's version, from its package.json. */
export function clientVersion(): string {
  const pkg = JSON.parse(readFileSync(new URL("../../package.json", import.meta.url), "utf8")) as { version?: string };
  return `v${pkg.version ?? "0.0.0"}`;
}

async function runVersion(argv: string[], io: CliIo): Promise<number> {
  const { values, positionals } = parseFlags(argv, OPTIONS);
  const s = new Session(io, values);
  if (values.help) {
    s.out(USAGE);
    return 0;
  }
  if (positionals.length > 0) throw new CliError(`error: unknown command "${positionals[0]}" for "choreo version"`);
  const format = values.output;
  if (format !== undefined && format !== "json" && format !== "yaml") throw new CliError(`error: --output must be 'yaml' or 'json'`);
  const client = { gitVersion: clientVersion(), platform: `${process.platform}/${process.arch === "x64" ? "amd64" : process.arch}` };
  let server: Record<string, unknown> | undefined;
  let failure: unknown;
  if (!values.client) {
    try {
      server = await s.client.json({ path: "/version" });
    } catch (err) {
      failure = err;
    }
  }
  if (format) {
    const doc = { clientVersion: client, ...(server ? { serverVersion: server } : {}) };
    s.out(format === "json" ? formatJson(doc) : formatYaml(doc));
  } else {
    s.out(`Client Version: ${client.gitVersion}`);
    if (server) s.out(`Server Version: ${String(server["gitVersion"] ?? "")}`);
  }
  if (failure !== undefined) throw failure;
  return 0;
}

export const versionCommand: Command = { name: "version", summary: "Print the client and server version information", run: runVersion };
