// Namespace, Event and Lease columns, and NAME/AGE for any other kind.
import { since } from "./age.js";
import { int, rec, str, type Json } from "./json.js";
import { AGE_COLUMN, NAME_COLUMN, col, wide, type KindTable } from "./types.js";

export const namespaceTable: KindTable = {
  columns: [NAME_COLUMN, col("Status", "The status of the namespace"), AGE_COLUMN],
  cells(ns, now) {
    const meta = rec(ns["metadata"]);
    return [str(meta["name"]), str(rec(ns["status"])["phase"]), since(meta["creationTimestamp"], now)];
  },
};

function eventSource(ev: Json): string {
  const source = rec(ev["source"]);
  const component = str(source["component"]) || str(ev["reportingComponent"]);
  const instance = str(source["host"]) || str(ev["reportingInstance"]);
  return instance ? `${component}, ${instance}` : component;
}

/** The event's columns, after kubectl's printEvent (LAST SEEN falls back to the first time, then the event time). */
export const eventTable: KindTable = {
  columns: [
    col("Last Seen", "The last time the event was seen."),
    col("Type", "Type of this event (Normal, Warning), new types could be added in the future."),
    col("Reason", "This should be a short, machine understandable string that gives the reason for the transition into the object's current status."),
    col("Object", "The object that this event is about."),
    wide("Subobject", "The subobject that this event is about (a field path such as spec.containers{name})."),
    wide("Source", "The component reporting this event."),
    col("Message", "A human-readable description of the status of this operation."),
    wide("First Seen", "The time at which the event was first recorded."),
    wide("Count", "The number of times this event has occurred.", { type: "integer" }),
    wide("Name", "Name of the event.", { format: "name" }),
  ],
  cells(ev, now) {
    const involved = rec(ev["involvedObject"]);
    const series = ev["series"] === undefined ? undefined : rec(ev["series"]);
    const first = str(ev["firstTimestamp"]) ? since(ev["firstTimestamp"], now) : since(ev["eventTime"], now);
    let last = str(ev["lastTimestamp"]) ? since(ev["lastTimestamp"], now) : first;
    let count = int(ev["count"]);
    if (series) {
      last = since(series["lastObservedTime"], now);
      count = int(series["count"]);
    } else if (count === 0) {
      count = 1;
    }
    const kind = str(involved["kind"]).toLowerCase();
    const target = str(involved["name"]) ? `${kind}/${str(involved["name"])}` : kind;
    return [
      last,
      str(ev["type"]),
      str(ev["reason"]),
      target,
      str(involved["fieldPath"]),
      eventSource(ev),
      str(ev["message"]).trim(),
      first,
      count,
      str(rec(ev["metadata"])["name"]),
    ];
  },
};

export const leaseTable: KindTable = {
  columns: [NAME_COLUMN, col("Holder", "The holder of the lease."), AGE_COLUMN],
  cells(lease, now) {
    const meta = rec(lease["metadata"]);
    return [str(meta["name"]), str(rec(lease["spec"])["holderIdentity"]), since(meta["creationTimestamp"], now)];
  },
};

/** NAME and AGE: what kubectl shows for a kind without a printer. */
export const defaultTable: KindTable = {
  columns: [NAME_COLUMN, AGE_COLUMN],
  cells(obj, now) {
    const meta = rec(obj["metadata"]);
    return [str(meta["name"]), since(meta["creationTimestamp"], now)];
  },
};
