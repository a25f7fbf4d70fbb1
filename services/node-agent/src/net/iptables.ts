// iptables-save parsing and iptables-restore scripts. The pure functions are
// what the clean-up and the service proxy share; only `saveRules` and
// `restore` touch the kernel.
import { run } from "../exec.js";

/** One table of an `iptables-save` dump. */
export interface SavedTable {
  /** Every chain declared in the table, builtin or not. */
  chains: string[];
  /** Every rule as printed (`-A CHAIN ...`), in order. */
  rules: string[];
}

/** An `iptables-save` dump by table name. */
export type SavedRules = Map<string, SavedTable>;

const BUILTIN = new Set(["INPUT", "OUTPUT", "FORWARD", "PREROUTING", "POSTROUTING"]);

/** Parses `iptables-save` output into tables of chains and rules. */
export function parseIptablesSave(text: string): SavedRules {
  const tables: SavedRules = new Map();
  let current: SavedTable | undefined;
  for (const raw of text.split("\n")) {
    const line = raw.trim();
    if (line.startsWith("*")) {
      current = { chains: [], rules: [] };
      tables.set(line.slice(1), current);
    } else if (!current || line === "" || line.startsWith("#") || line === "COMMIT") {
      continue;
    } else if (line.startsWith(":")) {
      current.chains.push(line.slice(1).split(" ")[0]!);
    } else if (line.startsWith("-A ")) {
      current.rules.push(line);
    }
  }
  return tables;
}

/** The chain a rule is appended to (`-A CHAIN ...`). */
export function ruleChain(rule: string): string {
  return rule.split(" ")[1] ?? "";
}

/** The target of a rule's `-j`/`-g`, or "". */
export function ruleTarget(rule: string): string {
  const m = / -[jg] (\S+)/.exec(rule);
  return m?.[1] ?? "";
}

/**
 * An `iptables-restore --noflush` script removing the chains `owned` selects
 * and every rule of other chains jumping to them (the jumps from builtin
 * chains, or from another component's chains). Chains are flushed first so
 * that deleting them never fails on a reference between them. Empty when
 * nothing matches.
 */
export function removalScript(saved: SavedRules, owned: (table: string, chain: string) => boolean): string {
  const out: string[] = [];
  for (const [table, t] of saved) {
    const chains = t.chains.filter((c) => !BUILTIN.has(c) && owned(table, c));
    const jumps = t.rules.filter((r) => !chains.includes(ruleChain(r)) && chains.includes(ruleTarget(r)));
    if (chains.length === 0 && jumps.length === 0) continue;
    out.push(`*${table}`);
    for (const r of jumps) out.push(`-D${r.slice(2)}`);
    for (const c of chains) out.push(`-F ${c}`);
    for (const c of chains) out.push(`-X ${c}`);
    out.push("COMMIT");
  }
  return out.length === 0 ? "" : `${out.join("\n")}\n`;
}

/** Whether `table` already holds the exact rule (as iptables-save prints it). */
export function hasRule(saved: SavedRules, table: string, rule: string): boolean {
  return saved.get(table)?.rules.includes(rule) ?? false;
}

/** Every chain of `table` for which `pred` holds. */
export function chainsOf(saved: SavedRules, table: string, pred: (chain: string) => boolean): string[] {
  return (saved.get(table)?.chains ?? []).filter((c) => !BUILTIN.has(c) && pred(c));
}

/** Reads the current rules of every table (one process). */
export async function saveRules(): Promise<SavedRules> {
  return parseIptablesSave(await run("iptables-save", []));
}

/** Applies a script atomically per table, leaving everything it does not name alone. */
export async function restore(script: string): Promise<void> {
  if (script.trim() === "") return;
  await run("iptables-restore", ["--noflush"], { input: script });
}
