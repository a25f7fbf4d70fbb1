import { readFileSync } from "node:fs";

/**
 * A process's CPU time so far (user + system, ms) from /proc: the cost per request compared
 * across runs holds on a loaded machine, where requests per second swing 2-3x between rounds.
 */
export function cpuMs(pid: number): number {
  const stat = readFileSync(`/proc/${pid}/stat`, "utf8");
  // Fields after the command (which may hold spaces) end with ")": utime and stime are the 12th and 13th after it.
  const f = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
  return ((Number(f[11]) + Number(f[12])) * 1000) / 100;
}
