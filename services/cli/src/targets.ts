// Command-line targets: `TYPE[,TYPE] [NAME...]`, `TYPE/NAME...`, and `all`.
import { CliError } from "./client.js";
import type { ResourceInfo, Resources } from "./resources.js";

/** One resource type and the names asked for (none: the whole collection). */
export interface Target {
  info: ResourceInfo;
  names: string[];
}

const MIXED =
  "error: there is no need to specify a resource type as a separate argument when passing arguments in resource/name form (e.g. 'choreo get resource/<resource_name>' instead of 'choreo get resource resource/<resource_name>')";

/** Parses targets; `all` expands to the types in the `all` category. */
export async function parseTargets(args: string[], resources: Pick<Resources, "byUserName" | "inCategory">): Promise<Target[]> {
  if (args.length === 0) return [];
  const out: Target[] = [];
  const add = (info: ResourceInfo, names: string[]): void => {
    const existing = out.find((t) => t.info.resource === info.resource && t.info.group === info.group);
    if (existing) existing.names.push(...names);
    else out.push({ info, names: [...names] });
  };
  if (args[0]?.includes("/")) {
    for (const arg of args) {
      const i = arg.indexOf("/");
      if (i <= 0 || i === arg.length - 1) throw new CliError(i < 0 ? MIXED : `error: arguments in resource/name form must have a single resource and name`);
      add(await resources.byUserName(arg.slice(0, i)), [arg.slice(i + 1)]);
    }
    return out;
  }
  const [types = "", ...names] = args;
  if (names.some((n) => n.includes("/"))) throw new CliError(MIXED);
  for (const t of types.split(",").filter((x) => x !== "")) {
    if (t.toLowerCase() === "all") for (const info of resources.inCategory("all")) add(info, names);
    else add(await resources.byUserName(t), names);
  }
  return out;
}

/** True when the targets name more than one type (names then print as `type/name`). */
export function multipleTypes(args: string[], targets: Target[]): boolean {
  return targets.length > 1 || (args[0] ?? "").split(",").some((t) => t.toLowerCase() === "all");
}
