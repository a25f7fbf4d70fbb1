// The subcommands, one file each. Add a command: write commands/<name>.ts
// exporting a Command, and list it here.
import type { Command } from "../session.js";
import { apiResourcesCommand } from "./api-resources.js";
import { applyCommand } from "./apply.js";
import { deleteCommand } from "./delete.js";
import { describeCommand } from "./describe.js";
import { eventsCommand } from "./events.js";
import { getCommand } from "./get.js";
import { kubeconfigCommand } from "./kubeconfig.js";
import { logsCommand } from "./logs.js";
import { rolloutCommand } from "./rollout.js";
import { tokenCommand } from "./token.js";
import { versionCommand } from "./version.js";

export const COMMANDS: readonly Command[] = [
  getCommand,
  describeCommand,
  logsCommand,
  eventsCommand,
  applyCommand,
  rolloutCommand,
  deleteCommand,
  apiResourcesCommand,
  versionCommand,
  kubeconfigCommand,
  tokenCommand,
];

/** The command of a name, if any. */
export function findCommand(name: string): Command | undefined {
  return COMMANDS.find((c) => c.name === name);
}
