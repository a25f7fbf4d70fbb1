import { execFile } from "node:child_process";
import path from "node:path";
import { fileURLToPath } from "node:url";

export const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "../../../..");

/**
 * Runs services/node-agent/src/node-setup.ts (prepare images, detect docker,
 * clean up) and returns its stdout; its stderr lines (pino JSON) go to `log`.
 */
export function nodeSetup(args: string[], log: (line: string) => void): Promise<string> {
  return new Promise((resolve, reject) => {
    execFile(
      process.execPath,
      ["--import", "tsx", path.join(ROOT, "services/node-agent/src/node-setup.ts"), ...args],
      { cwd: ROOT, timeout: 300_000 },
      (err, stdout, stderr) => {
        if (stderr.trim()) for (const line of stderr.trim().split("\n")) log(line);
        if (err) reject(new Error(`node setup ${args[0]} failed: ${stderr.trim().split("\n").pop() ?? err.message}`));
        else resolve(stdout.trim());
      },
    );
  });
}
