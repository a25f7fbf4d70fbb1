// `choreo api-resources`: what the server serves, from its discovery documents.
import { CliError } from "../client.js";
import { alignRows } from "../printers.js";
import type { ResourceInfo } from "../resources.js";
import { GLOBAL_OPTIONS, Session, parseFlags, type CliIo, type Command } from "../session.js";

const OPTIONS = {
  ...GLOBAL_OPTIONS,
  output: { type: "string", short: "o" },
  namespaced: { type: "string" },
  "api-group": { type: "string" },
  "no-headers": { type: "boolean" },
} as const;

const USAGE = `Print the supported API resources on the server.

Usage: choreo api-resources [-o wide|name] [--namespaced=true|false] [--api-group=GROUP] [--no-headers]`;

/** The rows of `api-resources` (header first unless noHeaders), sorted by group then name, core first. */
export function apiResourceRows(resources: ResourceInfo[], o: { wide?: boolean; noHeaders?: boolean } = {}): string[][] {
  const sorted = [...resources].sort((a, b) => a.group.localeCompare(b.group) || a.resource.localeCompare(b.resource));
  const rows = sorted.map((r) => {
    const cells = [r.resource, r.shortNames.join(","), r.apiVersion, String(r.namespaced), r.kind];
    if (o.wide) cells.push(`[${(r.verbs ?? []).join(" ")}]`, r.categories.join(","));
    return cells;
  });
  const header = ["NAME", "SHORTNAMES", "APIVERSION", "NAMESPACED", "KIND", ...(o.wide ? ["VERBS", "CATEGORIES"] : [])];
  return o.noHeaders ? rows : [header, ...rows];
}

async function runApiResources(argv: string[], io: CliIo): Promise<number> {
  const { values, positionals } = parseFlags(argv, OPTIONS);
  const s = new Session(io, values);
  if (values.help) {
    s.out(USAGE);
    return 0;
  }
  if (positionals.length > 0) throw new CliError(`error: unexpected arguments: ${positionals.join(" ")}`);
  const output = values.output;
  if (output !== undefined && output !== "wide" && output !== "name") throw new CliError(`error: --output ${output} is not available`);
  if (values.namespaced !== undefined && values.namespaced !== "true" && values.namespaced !== "false") {
    throw new CliError(
      `error: invalid argument "${values.namespaced}" for "--namespaced" flag: strconv.ParseBool: parsing "${values.namespaced}": invalid syntax`,
    );
  }
  let resources = await s.resources.discover();
  if (values.namespaced !== undefined) resources = resources.filter((r) => String(r.namespaced) === values.namespaced);
  if (values["api-group"] !== undefined) resources = resources.filter((r) => r.group === values["api-group"]);
  if (output === "name") {
    for (const r of [...resources].sort((a, b) => a.group.localeCompare(b.group) || a.resource.localeCompare(b.resource))) {
      s.out(r.group ? `${r.resource}.${r.group}` : r.resource);
    }
    return 0;
  }
  for (const line of alignRows(apiResourceRows(resources, { wide: output === "wide", noHeaders: values["no-headers"] === true }))) s.out(line);
  return 0;
}

export const apiResourcesCommand: Command = { name: "api-resources", summary: "Print the supported API resources on the server", run: runApiResources };
