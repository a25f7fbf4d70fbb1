// Output: kubectl-style aligned tables, names, JSON and YAML.
import { ageOf } from "@choreo/kit/apimachinery";
import { stringify } from "yaml";
import { objectName, type ResourceInfo } from "./resources.js";

/** Columns separated like kubectl's tabwriter: cell width + 3 spaces; the last cell unpadded. */
export const COLUMN_GAP = 3;

/**
 * Aligns rows of cells into lines (without trailing newline). `minWidths`
 * keeps columns at least as wide as earlier output (rows printed by a watch).
 */
export function alignRows(rows: readonly (readonly string[])[], minWidths: readonly number[] = []): string[] {
  const widths = columnWidths(rows, minWidths);
  return rows.map((r) => r.map((cell, i) => (i === r.length - 1 ? cell : cell.padEnd(widths[i] + COLUMN_GAP))).join(""));
}

/** The width of each column: its widest cell (or the minimum given). */
export function columnWidths(rows: readonly (readonly string[])[], minWidths: readonly number[] = []): number[] {
  const widths = [...minWidths];
  for (const r of rows) r.forEach((cell, i) => (widths[i] = Math.max(widths[i] ?? 0, cell.length)));
  return widths;
}

/** A meta.k8s.io Table as the server sends it (the parts the printer reads). */
export interface Table {
  columnDefinitions: { name: string; priority?: number; format?: string }[];
  rows: { cells: unknown[]; object?: { metadata?: { name?: string; namespace?: string; labels?: Record<string, string> } } }[];
  metadata?: { resourceVersion?: string; continue?: string };
}

export interface TableOptions {
  /** Show priority-1 columns (`-o wide`). */
  wide?: boolean;
  /** Add a NAMESPACE column first (`-A`). */
  withNamespace?: boolean;
  /** Prefix names with the type (`pod/web`), as when several types are listed. */
  kindPrefix?: Pick<ResourceInfo, "kind" | "group">;
  /** Add a LABELS column (`--show-labels`). */
  showLabels?: boolean;
}

/** A cell as kubectl prints it. */
export function cellText(v: unknown): string {
  if (v === null || v === undefined) return "<none>";
  if (typeof v === "string") return v;
  if (typeof v === "number" || typeof v === "boolean") return String(v);
  return JSON.stringify(v);
}

function formatLabels(labels: Record<string, string> | undefined): string {
  const keys = Object.keys(labels ?? {}).sort();
  return keys.length === 0 ? "<none>" : keys.map((k) => `${k}=${labels?.[k] ?? ""}`).join(",");
}

/** The header and row cells of a Table, with the chosen columns. */
export function tableCells(t: Table, o: TableOptions = {}): { header: string[]; rows: string[][] } {
  const shown = t.columnDefinitions.map((c, i) => ({ c, i })).filter(({ c }) => o.wide || (c.priority ?? 0) === 0);
  const nameIndex = t.columnDefinitions.findIndex((c) => c.format === "name");
  const header = shown.map(({ c }) => c.name.toUpperCase());
  if (o.withNamespace) header.unshift("NAMESPACE");
  if (o.showLabels) header.push("LABELS");
  const rows = t.rows.map((r) => {
    const cells = shown.map(({ i }) => {
      const text = cellText(r.cells[i]);
      return o.kindPrefix && i === nameIndex ? objectName(o.kindPrefix, text) : text;
    });
    if (o.withNamespace) cells.unshift(r.object?.metadata?.namespace ?? "");
    if (o.showLabels) cells.push(formatLabels(r.object?.metadata?.labels));
    return cells;
  });
  return { header, rows };
}

/** A Table printed like `kubectl get`: upper-case header (unless noHeaders), aligned columns. */
export function formatTable(t: Table, o: TableOptions & { noHeaders?: boolean } = {}): string[] {
  const { header, rows } = tableCells(t, o);
  return alignRows(o.noHeaders ? rows : [header, ...rows]);
}

/** A NAME/AGE Table made from a plain list: what kubectl prints when the server sends no Table. */
export function tableFromObjects(items: Record<string, unknown>[], now: number = Date.now()): Table {
  return {
    columnDefinitions: [
      { name: "Name", priority: 0, format: "name" },
      { name: "Age", priority: 0 },
    ],
    rows: items.map((item) => {
      const metadata = (item["metadata"] ?? {}) as { name?: string; namespace?: string; creationTimestamp?: string; labels?: Record<string, string> };
      return { cells: [metadata.name ?? "", ageOf(metadata.creationTimestamp, now)], object: { metadata } };
    }),
  };
}

/** JSON as kubectl prints it (4-space indent). */
export function formatJson(v: unknown): string {
  return JSON.stringify(v, null, 4);
}

/** YAML as kubectl prints it. */
export function formatYaml(v: unknown): string {
  return stringify(v, { lineWidth: 0 }).replace(/\n$/, "");
}

/** Several objects as one `kind: List` (what `-o yaml|json` prints for a list). */
export function asList(items: unknown[]): Record<string, unknown> {
  return { apiVersion: "v1", items, kind: "List", metadata: { resourceVersion: "" } };
}
