// `choreo up`'s first step: what the machine needs to run a local cluster.
// When a command is missing, scripts/ensure-deps.sh installs it (Debian's
// packages, as `npm start` does before choreo up), its output in
// <data-dir>/logs/install.log.
import { spawn } from "node:child_process";
import { accessSync, constants, createWriteStream, existsSync } from "node:fs";
import path from "node:path";
import { ROOT } from "./node-setup.js";

/** The commands `choreo up` runs itself (the node agents check their own: iptables, ip, docker). */
export function neededCommands(o: { ha: boolean; nodes: number }): string[] {
  return ["nats-server", "redis-server", "openssl", ...(o.ha ? ["haproxy"] : []), ...(o.nodes > 0 ? ["ip", "iptables"] : [])];
}

/** Whether `cmd` is an executable on `PATH`. */
export function onPath(cmd: string, env: NodeJS.ProcessEnv = process.env): boolean {
  for (const dir of (env["PATH"] ?? "").split(path.delimiter).filter(Boolean)) {
    try {
      accessSync(path.join(dir, cmd), constants.X_OK);
      return true;
    } catch {
      // not in this directory
    }
  }
  return false;
}

const NPM = "npm dependencies";

/** What the step found or did. */
export interface DependencyReport {
  /** Installed now (by ensure-deps.sh). */
  installed: string[];
  /** There already. */
  present: string[];
}

/**
 * Checks the commands and the npm dependencies; runs scripts/ensure-deps.sh
 * (root, Debian) when one is missing or `install` asks for it.
 */
export async function ensureDependencies(o: {
  ha: boolean;
  nodes: number;
  logFile: string;
  /** Run scripts/ensure-deps.sh even when nothing is missing (`--install`: everything it sees to, Docker and images too). */
  install?: boolean;
  /** What the script is at (its `choreo: …` lines), or what is missing before it runs. */
  onProgress?: (what: string) => void;
}): Promise<DependencyReport> {
  const needed = neededCommands(o);
  const missing = needed.filter((c) => !onPath(c));
  if (!existsSync(path.join(ROOT, "node_modules"))) missing.push(NPM);
  const present = [...needed.filter((c) => !missing.includes(c)), ...(missing.includes(NPM) ? [] : [NPM])];
  if (missing.length === 0 && !o.install) return { installed: [], present };
  const script = path.join(ROOT, "scripts/ensure-deps.sh");
  if (!existsSync(script)) {
    if (missing.length === 0) return { installed: [], present };
    throw new Error(`missing ${missing.join(", ")}; install them (Debian: apt-get install ${missing.join(" ")})`);
  }
  o.onProgress?.(
    missing.length > 0
      ? `installing ${missing.join(", ")} (scripts/ensure-deps.sh)`
      : "OS packages, Docker, npm dependencies, local images (scripts/ensure-deps.sh)",
  );
  // What the script says it installs: "choreo: installing nats-server redis-server", "choreo: installing npm dependencies".
  const installed = new Set<string>();
  await new Promise<void>((resolve, reject) => {
    const log = createWriteStream(o.logFile, { flags: "a" });
    const child = spawn("bash", [script], { cwd: ROOT, stdio: ["ignore", "pipe", "pipe"] });
    child.stdout.pipe(log, { end: false });
    child.stderr.pipe(log, { end: false });
    let partial = "";
    child.stderr.on("data", (b: Buffer) => {
      const lines = (partial + b.toString()).split("\n");
      partial = lines.pop() ?? "";
      for (const line of lines) {
        const said = /^choreo: (.+)$/.exec(line.trim())?.[1];
        if (!said) continue;
        o.onProgress?.(said);
        const what = /^installing (.+)$/.exec(said)?.[1];
        if (what === NPM) installed.add(NPM);
        else if (what) for (const p of what.split(/\s+/).filter(Boolean)) installed.add(p);
      }
    });
    child.on("error", reject);
    child.on("exit", (code) => {
      log.end();
      if (code === 0) resolve();
      else reject(new Error(`scripts/ensure-deps.sh failed (exit ${code}): see ${o.logFile}`));
    });
  });
  const still = needed.filter((c) => !onPath(c));
  if (still.length > 0) throw new Error(`still missing after scripts/ensure-deps.sh: ${still.join(", ")} (see ${o.logFile})`);
  return { installed: [...installed], present: present.filter((p) => !installed.has(p)) };
}
