import { badRequest, kindOf, selectableFields, type KindInfo } from "@choreo/kit";
import {
  assertSupportedFields,
  FieldSelectorError,
  parseFieldSelector,
  parseLabelSelector,
  SelectorParseError,
  type FieldSelector,
  type LabelSelector,
} from "@choreo/kit/apimachinery";
import type { Object as ApiObject, WatchEvent } from "@choreo/kit/gen/choreo/api/v1/api";

/** What a list or watch asked for: namespace, label and field selectors. */
export interface Selection {
  readonly info: KindInfo;
  readonly namespace: string;
  readonly labels: LabelSelector;
  readonly fields: FieldSelector;
}

/** Parses selectors; 400 BadRequest on bad syntax or unsupported fields. */
export function parseSelection(info: KindInfo, namespace: string, labelSelector: string, fieldSelector: string): Selection {
  try {
    const labels = parseLabelSelector(labelSelector);
    const fields = parseFieldSelector(fieldSelector);
    assertSupportedFields(fields, ["metadata.name", "metadata.namespace", ...info.selectableFields], info.resource);
    return { info, namespace: info.namespaced ? namespace : "", labels, fields };
  } catch (err) {
    if (err instanceof SelectorParseError || err instanceof FieldSelectorError) throw badRequest(err.message);
    throw err;
  }
}

/** Whether an object is selected. */
export function selects(sel: Selection, labels: Record<string, string>, fields: Record<string, string>): boolean {
  return sel.labels.matches(labels) && sel.fields.matches((f) => fields[f]);
}

/** Whether a stored object is selected. */
export function selectsObject(sel: Selection, o: ApiObject): boolean {
  const v = o.kind?.value;
  if (!v) return false;
  return selects(sel, v.metadata?.labels ?? {}, selectableFields(kindOf(o), v));
}

/** A change as seen by a filtered watch. */
export interface Change {
  resource: string;
  namespace: string;
  event: WatchEvent;
  labels: Record<string, string>;
  fields: Record<string, string>;
}

/**
 * The event a filtered watcher sees for a change, or undefined: an object
 * that starts matching is ADDED, one that stops matching is DELETED.
 */
export function selectChange(sel: Selection, c: Change): WatchEvent | undefined {
  if (c.resource !== sel.info.resource) return undefined;
  if (sel.namespace && c.namespace !== sel.namespace) return undefined;
  const now = selects(sel, c.labels, c.fields);
  const ev = c.event;
  if (ev.type !== "MODIFIED") return now ? ev : undefined;
  const before = ev.hasPrev ? selects(sel, ev.prevLabels, ev.prevFields) : now;
  if (now && before) return ev;
  if (now) return { ...ev, type: "ADDED" };
  if (before) return { ...ev, type: "DELETED" };
  return undefined;
}

/** A Change from a raw event (the JetStream path). */
export function changeOf(ev: WatchEvent): Change | undefined {
  const o = ev.object;
  if (!o?.kind) return undefined;
  const info = kindOf(o);
  const v = o.kind.value;
  return { resource: info.resource, namespace: v.metadata?.namespace ?? "", event: ev, labels: v.metadata?.labels ?? {}, fields: selectableFields(info, v) };
}
