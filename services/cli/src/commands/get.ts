// `choreo get`: tables (the server's columns), names, JSON/YAML, and watches.
import { CliError, TABLE_ACCEPT, formatError, isNotFound, type Query, type StatusError, type WatchEvent } from "../client.js";
import {
  alignRows,
  asList,
  columnWidths,
  formatJson,
  formatTable,
  formatYaml,
  tableCells,
  tableFromObjects,
  type Table,
  type TableOptions,
} from "../printers.js";
import { objectName, resourcePath, type ResourceInfo } from "../resources.js";
import { GLOBAL_OPTIONS, Session, parseFlags, type CliIo, type Command } from "../session.js";
import { multipleTypes, parseTargets, type Target } from "../targets.js";

const OPTIONS = {
  ...GLOBAL_OPTIONS,
  output: { type: "string", short: "o" },
  selector: { type: "string", short: "l" },
  "field-selector": { type: "string" },
  "all-namespaces": { type: "boolean", short: "A" },
  watch: { type: "boolean", short: "w" },
  "no-headers": { type: "boolean" },
  "show-labels": { type: "boolean" },
  "ignore-not-found": { type: "boolean" },
} as const;

const USAGE = `Display one or many resources.

Usage: choreo get TYPE[,TYPE...] [NAME...] | TYPE/NAME... [flags]

  -o, --output=''          wide | yaml | json | name
  -l, --selector=''        label selector (e.g. app=web,tier!=db)
      --field-selector=''  field selector (e.g. status.phase=Running)
  -A, --all-namespaces     list across all namespaces
  -w, --watch              after listing, watch for changes
      --no-headers         no header row
      --show-labels        add a LABELS column
      --ignore-not-found   no error for missing named objects
  -n, --namespace=''       namespace (default: the context's, else default)

Examples:
  choreo get pods
  choreo get po,svc -o wide
  choreo get pod web-1 -o yaml
  choreo get all -A`;

type OutputFormat = "table" | "wide" | "yaml" | "json" | "name";

function outputFormat(o: string | undefined): OutputFormat {
  if (o === undefined || o === "") return "table";
  if (o === "wide" || o === "yaml" || o === "json" || o === "name") return o;
  throw new CliError(`error: unable to match a printer suitable for the output format "${o}", allowed formats are: json,name,wide,yaml`);
}

interface ListOptions {
  namespace: string | undefined;
  labelSelector?: string;
  fieldSelector?: string;
}

type Obj = Record<string, unknown>;

/** A list's items, each with its kind and apiVersion (lists may leave them out). */
function itemsOf(info: ResourceInfo, list: Obj): Obj[] {
  const items = Array.isArray(list["items"]) ? (list["items"] as Obj[]) : [];
  return items.map((i) => ({ apiVersion: info.apiVersion, kind: info.kind, ...i }));
}

function asTable(body: Obj, info: ResourceInfo): Table {
  if (body["kind"] === "Table") return body as unknown as Table;
  if (Array.isArray(body["items"])) return tableFromObjects(body["items"] as Obj[]);
  return tableFromObjects([{ apiVersion: info.apiVersion, kind: info.kind, ...body }]);
}

class Getter {
  constructor(private readonly s: Session) {}

  /** Every page of a list (limit 500, following `continue`), as a Table or as items. */
  async listTable(info: ResourceInfo, o: ListOptions): Promise<Table> {
    let table: Table | undefined;
    let cont: string | undefined;
    do {
      const body = await this.s.client.json<Obj>({ path: resourcePath(info, o.namespace), query: this.query(o, cont), accept: TABLE_ACCEPT });
      const page = asTable(body, info);
      if (table) table.rows.push(...page.rows);
      else table = { ...page, rows: [...page.rows] };
      table.metadata = page.metadata;
      cont = page.metadata?.continue || ((body["metadata"] as Obj | undefined)?.["continue"] as string | undefined);
    } while (cont);
    return table;
  }

  async listItems(info: ResourceInfo, o: ListOptions): Promise<{ items: Obj[]; resourceVersion: string }> {
    const items: Obj[] = [];
    let cont: string | undefined;
    let resourceVersion = "";
    do {
      const body = await this.s.client.json<Obj>({ path: resourcePath(info, o.namespace), query: this.query(o, cont) });
      items.push(...itemsOf(info, body));
      const meta = (body["metadata"] ?? {}) as { continue?: string; resourceVersion?: string };
      cont = meta.continue;
      resourceVersion = meta.resourceVersion ?? resourceVersion;
    } while (cont);
    return { items, resourceVersion };
  }

  private query(o: ListOptions, cont: string | undefined): Query {
    return { labelSelector: o.labelSelector, fieldSelector: o.fieldSelector, limit: 500, continue: cont };
  }

  async getTable(info: ResourceInfo, namespace: string, name: string): Promise<Table> {
    return asTable(await this.s.client.json<Obj>({ path: resourcePath(info, namespace, name), accept: TABLE_ACCEPT }), info);
  }

  async getObject(info: ResourceInfo, namespace: string, name: string): Promise<Obj> {
    const obj = await this.s.client.json<Obj>({ path: resourcePath(info, namespace, name) });
    return { apiVersion: info.apiVersion, kind: info.kind, ...obj };
  }
}

function noResources(s: Session, targets: Target[], allNamespaces: boolean): void {
  const namespaced = targets.some((t) => t.info.namespaced);
  s.err(allNamespaces || !namespaced ? "No resources found" : `No resources found in ${s.namespace} namespace.`);
}

/** Prints objects in a machine format (one, or a List). */
function printObjects(s: Session, format: "yaml" | "json" | "name", objects: { info: ResourceInfo; obj: Obj }[], single: boolean): void {
  if (format === "name") {
    for (const { info, obj } of objects) s.out(objectName(info, String((obj["metadata"] as Obj | undefined)?.["name"] ?? "")));
    return;
  }
  const value = single && objects.length === 1 ? objects[0]?.obj : asList(objects.map((o) => o.obj));
  s.out(format === "json" ? formatJson(value) : formatYaml(value));
}

async function runGet(argv: string[], io: CliIo): Promise<number> {
  const { values, positionals } = parseFlags(argv, OPTIONS);
  const s = new Session(io, values);
  if (values.help) {
    s.out(USAGE);
    return 0;
  }
  const format = outputFormat(values.output);
  if (positionals.length === 0) {
    throw new CliError(`error: You must specify the type of resource to get. Use "choreo api-resources" for a complete list of supported resources.`);
  }
  const targets = await parseTargets(positionals, s.resources);
  const allNamespaces = values["all-namespaces"] === true;
  const list: Omit<ListOptions, "namespace"> = { labelSelector: values.selector, fieldSelector: values["field-selector"] };
  const nsFor = (info: ResourceInfo): string | undefined => (allNamespaces || !info.namespaced ? undefined : s.namespace);
  const g = new Getter(s);
  if (values.watch)
    return watch(s, g, targets, { ...list, format, allNamespaces, noHeaders: values["no-headers"] === true, showLabels: values["show-labels"] === true });

  const kindPrefix = multipleTypes(positionals, targets);
  let failed = false;
  const onError = (err: unknown): void => {
    if (values["ignore-not-found"] && isNotFound(err)) return;
    if (!(err instanceof Error) || err.name !== "StatusError") throw err;
    s.err(formatError(err as StatusError));
    failed = true;
  };

  if (format === "table" || format === "wide") {
    const blocks: string[][] = [];
    for (const t of targets) {
      let table: Table | undefined;
      if (t.names.length === 0) {
        table = await g.listTable(t.info, { ...list, namespace: nsFor(t.info) });
      } else {
        for (const name of t.names) {
          try {
            const one = await g.getTable(t.info, s.namespace, name);
            if (table) table.rows.push(...one.rows);
            else table = { ...one, rows: [...one.rows] };
          } catch (err) {
            onError(err);
          }
        }
      }
      if (!table || table.rows.length === 0) continue;
      const opts: TableOptions = { wide: format === "wide", withNamespace: allNamespaces && t.info.namespaced, showLabels: values["show-labels"] === true };
      if (kindPrefix) opts.kindPrefix = t.info;
      blocks.push(formatTable(table, { ...opts, noHeaders: values["no-headers"] === true }));
    }
    blocks.forEach((lines, i) => {
      if (i > 0) s.out("");
      for (const l of lines) s.out(l);
    });
    if (blocks.length === 0 && !failed && targets.every((t) => t.names.length === 0)) noResources(s, targets, allNamespaces);
    return failed ? 1 : 0;
  }

  const objects: { info: ResourceInfo; obj: Obj }[] = [];
  for (const t of targets) {
    if (t.names.length === 0) {
      const { items } = await g.listItems(t.info, { ...list, namespace: nsFor(t.info) });
      objects.push(...items.map((obj) => ({ info: t.info, obj })));
      continue;
    }
    for (const name of t.names) {
      try {
        objects.push({ info: t.info, obj: await g.getObject(t.info, s.namespace, name) });
      } catch (err) {
        onError(err);
      }
    }
  }
  const single = targets.length === 1 && targets[0]?.names.length === 1 && !kindPrefix;
  if (format === "name" && objects.length === 0 && !failed && targets.every((t) => t.names.length === 0)) noResources(s, targets, allNamespaces);
  else if (objects.length > 0 || !single) printObjects(s, format, objects, single);
  return failed ? 1 : 0;
}

interface WatchOptions {
  labelSelector?: string;
  fieldSelector?: string;
  format: OutputFormat;
  allNamespaces: boolean;
  noHeaders: boolean;
  showLabels: boolean;
}

/** `get -w`: list, print, then watch from the list's resourceVersion and print each change. */
async function watch(s: Session, g: Getter, targets: Target[], o: WatchOptions): Promise<number> {
  const [target] = targets;
  if (!target || targets.length !== 1 || target.names.length > 1) {
    throw new CliError(
      `error: watch is only supported on individual resources and resource collections, but ${targets.reduce((n, t) => n + Math.max(1, t.names.length), 0)} resources were found`,
    );
  }
  const info = target.info;
  const byName = target.names[0] === undefined ? undefined : `metadata.name=${target.names[0]}`;
  const fieldSelector = [o.fieldSelector, byName].filter((x) => x).join(",") || undefined;
  const namespace = o.allNamespaces || !info.namespaced ? undefined : s.namespace;
  const listOpts: ListOptions = { namespace, labelSelector: o.labelSelector, fieldSelector };
  const tableOpts: TableOptions = { wide: o.format === "wide", withNamespace: o.allNamespaces && info.namespaced, showLabels: o.showLabels };
  const tabular = o.format === "table" || o.format === "wide";

  let resourceVersion = "";
  let widths: number[] = [];
  let headerPrinted = o.noHeaders;
  let printedDocs = 0;
  const printRows = (table: Table): void => {
    const { header, rows } = tableCells(table, tableOpts);
    if (rows.length === 0) return;
    const lines = headerPrinted ? rows : [header, ...rows];
    widths = columnWidths(lines, widths);
    for (const l of alignRows(lines, widths)) s.out(l);
    headerPrinted = true;
  };
  const printDoc = (obj: Obj): void => {
    if (o.format === "name") s.out(objectName(info, String((obj["metadata"] as Obj | undefined)?.["name"] ?? "")));
    else if (o.format === "json") s.out(formatJson(obj));
    else {
      if (printedDocs > 0) s.out("---");
      s.out(formatYaml(obj));
    }
    printedDocs++;
  };

  if (tabular) {
    const table = await g.listTable(info, listOpts);
    resourceVersion = table.metadata?.resourceVersion ?? "";
    printRows(table);
  } else {
    const list = await g.listItems(info, listOpts);
    resourceVersion = list.resourceVersion;
    for (const obj of list.items) printDoc(obj);
  }

  let code = 0;
  await s.client.watch(
    {
      path: resourcePath(info, namespace),
      query: { resourceVersion, labelSelector: o.labelSelector, fieldSelector },
      accept: tabular ? TABLE_ACCEPT : "application/json",
      signal: s.io.signal,
    },
    (ev: WatchEvent) => {
      if (ev.type === "BOOKMARK") return;
      if (ev.type === "ERROR") {
        const status = ev.object as { code?: number; message?: string; reason?: string };
        // Expired (410): the list is too old to watch from; kubectl ends quietly.
        if (status.code !== 410) {
          s.err(`Error from server${status.reason ? ` (${status.reason})` : ""}: ${status.message ?? "watch error"}`);
          code = 1;
        }
        return false;
      }
      if (tabular) printRows(asTable(ev.object, info));
      else printDoc({ apiVersion: info.apiVersion, kind: info.kind, ...ev.object });
    },
  );
  return code;
}

export const getCommand: Command = { name: "get", summary: "Display one or many resources", run: runGet };
