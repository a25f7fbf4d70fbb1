// Shared by the runtimes' adversarial tests: every user-controlled string of
// a pod spec, each shaped to run `touch <marker>` on the host if any host
// program or shell ever parsed it (as an option, a command substitution, a
// second command), and what the container must see instead: the same bytes.
import { randomUUID } from "node:crypto";
import os from "node:os";
import path from "node:path";

/** The hostile strings of one test run; `marker` is a host path nothing may create. */
export interface HostileStrings {
  marker: string;
  /** Values (env values, args): substitutions, separators, quotes, newlines, spaces, env -S. */
  values: string[];
  /** Env names Kubernetes accepts (`[-._a-zA-Z][-._a-zA-Z0-9]*`) that are options to env(1) and friends. */
  envNames: string[];
  /** A hostname that is an option of hostname(1): `-F FILE` reads the host's FILE into the pod's hostname. */
  hostname: string;
  /** A working dir that is an option and a substitution. */
  workingDir: string;
  /** argv[0] of an exec that is an option of env(1)/nsenter(1). */
  execCommand: string[];
}

/** A fresh set, with a marker path unique to this run under the host's tmp dir. */
export function hostileStrings(): HostileStrings {
  const marker = path.join(os.tmpdir(), `choreo-pwn-${randomUUID()}`);
  const t = `touch ${marker}`;
  return {
    marker,
    values: [`$(${t})`, `; ${t}`, `\`${t}\``, `'"; ${t}; echo "'`, `a\n${t}\nb`, `  two  spaces  `, `-S ${t}`, `--split-string=${t}`],
    envNames: ["-S", "-SX", "--help", "-i", "my.setting", "-u", "--split-string", "-"],
    hostname: "-F/etc/shadow",
    workingDir: `/w/--wd=$(${t})`,
    execCommand: ["-S", t],
  };
}

/** The spec's env entries: each hostile name with a hostile value. */
export function hostileEnv(h: HostileStrings): { name: string; value: string }[] {
  return h.envNames.map((name, i) => ({ name, value: h.values[i % h.values.length]! }));
}

/** NUL-separated strings (as /proc/PID/environ and cmdline hold them) as a list. */
export function nulList(s: string): string[] {
  return s.split("\0").slice(0, -1);
}
