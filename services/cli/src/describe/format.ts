// kubectl describe's layout: "Label:  value" lines aligned at one column,
// nested blocks indented by two, maps one entry per line, tables for events
// and conditions.
import { humanDuration } from "@choreo/kit/apimachinery";

export type Obj = Record<string, unknown>;

/** A value at a dotted path of a JSON object. */
export function at(o: unknown, path: string): unknown {
  let cur = o;
  for (const part of path.split(".")) {
    if (cur === null || typeof cur !== "object") return undefined;
    cur = (cur as Obj)[part];
  }
  return cur;
}

export const str = (v: unknown, dflt = "<none>"): string =>
  v === undefined || v === null || v === "" ? dflt : typeof v === "object" ? JSON.stringify(v) : String(v as string | number | boolean);
export const arr = (v: unknown): Obj[] => (Array.isArray(v) ? (v as Obj[]) : []);
export const map = (v: unknown): Record<string, string> => (v && typeof v === "object" && !Array.isArray(v) ? (v as Record<string, string>) : {});

/** Collects the lines of one description. */
export class Writer {
  readonly lines: string[] = [];
  constructor(private readonly width = 18) {}

  /** `Label:   value` at `indent` (levels of two spaces). */
  field(label: string, value: unknown, indent = 0): void {
    const pad = "  ".repeat(indent);
    const head = `${pad}${label}:`;
    this.lines.push(value === undefined ? head : `${head.padEnd(Math.max(this.width, head.length + 1))}${str(value)}`);
  }

  /** A map, one `k=v` per line, aligned under the first. */
  mapField(label: string, m: Record<string, string>, indent = 0, sep = "="): void {
    const entries = Object.entries(m).sort(([a], [b]) => a.localeCompare(b));
    if (entries.length === 0) return this.field(label, "<none>", indent);
    const head = `${"  ".repeat(indent)}${label}:`.padEnd(this.width);
    entries.forEach(([k, v], i) => this.lines.push(`${i === 0 ? head : " ".repeat(Math.max(this.width, head.length))}${k}${sep}${v}`));
  }

  /** A list of strings under one label. */
  listField(label: string, items: string[], indent = 0): void {
    if (items.length === 0) return this.field(label, "<none>", indent);
    const head = `${"  ".repeat(indent)}${label}:`.padEnd(this.width);
    items.forEach((x, i) => this.lines.push(`${i === 0 ? head : " ".repeat(Math.max(this.width, head.length))}${x}`));
  }

  /** A table with a header row, columns separated by at least two spaces, at `indent`. */
  table(header: string[], rows: string[][], indent = 1): void {
    const all = [header, header.map((h) => "-".repeat(h.length)), ...rows];
    const widths = header.map((_, i) => Math.max(...all.map((r) => (r[i] ?? "").length)));
    for (const r of all)
      this.lines.push(`${"  ".repeat(indent)}${r.map((c, i) => (i === r.length - 1 ? c : c.padEnd((widths[i] ?? 0) + 2))).join("")}`.trimEnd());
  }

  line(s = ""): void {
    this.lines.push(s);
  }

  toString(): string {
    return this.lines.join("\n");
  }
}

/** "5m" style age of a timestamp relative to `now`. */
export function age(ts: unknown, now: number): string {
  const t = Date.parse(str(ts, ""));
  return Number.isFinite(t) ? humanDuration(Math.max(0, now - t)) : "<unknown>";
}

/** The Events section, kubectl's way: Type, Reason, Age ("(x3 over 10s)" when aggregated), From, Message. */
export function eventsSection(w: Writer, events: Obj[], now: number): void {
  if (events.length === 0) {
    w.field("Events", "<none>");
    return;
  }
  w.field("Events", undefined);
  const sorted = [...events].sort((a, b) => str(a["lastTimestamp"], "").localeCompare(str(b["lastTimestamp"], "")));
  w.table(
    ["Type", "Reason", "Age", "From", "Message"],
    sorted.map((e) => {
      const count = Number(e["count"] ?? 1);
      const last = age(e["lastTimestamp"], now);
      const when = count > 1 ? `${last} (x${count} over ${age(e["firstTimestamp"], now)})` : last;
      return [str(e["type"], ""), str(e["reason"], ""), when, str(at(e, "source.component") ?? e["reportingComponent"], ""), str(e["message"], "")];
    }),
  );
}
