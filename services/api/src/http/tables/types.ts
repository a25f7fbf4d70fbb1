import type { Json } from "./json.js";

/** One column of a meta.k8s.io/v1 Table. */
export interface ColumnDefinition {
  name: string;
  type: "string" | "integer" | "number" | "boolean" | "date";
  format: string;
  description: string;
  /** 0: always shown; 1: shown with `-o wide`. */
  priority: 0 | 1;
}

/** How one kind prints: its columns and the cells of one object (same count, same order). */
export interface KindTable {
  columns: readonly ColumnDefinition[];
  cells(obj: Json, now: number): unknown[];
}

/** A column definition with kubectl's defaults (type string, no format, priority 0). */
export function col(name: string, description: string, more: Partial<Omit<ColumnDefinition, "name" | "description">> = {}): ColumnDefinition {
  return { name, type: "string", format: "", description, priority: 0, ...more };
}

/** A priority-1 (wide) column. */
export function wide(name: string, description: string, more: Partial<Omit<ColumnDefinition, "name" | "description">> = {}): ColumnDefinition {
  return col(name, description, { ...more, priority: 1 });
}

export const NAME_COLUMN = col(
  "Name",
  "Name must be unique within a namespace. Is required when creating resources, although some resources may allow a client to request the generation of an appropriate name automatically. Name is primarily intended for creation idempotence and configuration definition. Cannot be updated.",
  { format: "name" },
);

export const AGE_COLUMN = col(
  "Age",
  "CreationTimestamp is a timestamp representing the server time when this object was created. It is not guaranteed to be set in happens-before order across separate operations. Clients may not set this value. It is represented in RFC3339 form and is in UTC.",
);
