// HorizontalPodAutoscaler columns, after kubectl's printHorizontalPodAutoscaler
// and formatHPAMetrics (1.32: each metric as `<name>: <current>/<target>`, at
// most two, then `+ N more...`).
import { since } from "./age.js";
import { int, rec, recs, str, type Json } from "./json.js";
import { AGE_COLUMN, NAME_COLUMN, col, type KindTable } from "./types.js";

const UNKNOWN = "<unknown>";

/** A quantity as printed, `<unknown>` when absent. */
function quantity(v: unknown): string {
  return typeof v === "string" && v !== "" ? v : typeof v === "number" ? String(v) : UNKNOWN;
}

function percent(v: unknown): string | undefined {
  return typeof v === "number" ? `${v}%` : undefined;
}

/** One metric as kubectl's TARGETS column shows it. */
function formatMetric(spec: Json, status: Json | undefined): string {
  switch (str(spec["type"])) {
    case "External":
    case "Object": {
      const field = str(spec["type"]) === "External" ? "external" : "object";
      const target = rec(rec(spec[field])["target"]);
      const current = rec(rec(status?.[field])["current"]);
      if (target["averageValue"] !== undefined) return `${quantity(current["averageValue"])}/${quantity(target["averageValue"])} (avg)`;
      return `${quantity(current["value"])}/${quantity(target["value"])}`;
    }
    case "Pods":
      return `${quantity(rec(rec(status?.["pods"])["current"])["averageValue"])}/${quantity(rec(rec(spec["pods"])["target"])["averageValue"])}`;
    case "Resource":
    case "ContainerResource": {
      const field = str(spec["type"]) === "Resource" ? "resource" : "containerResource";
      const source = rec(spec[field]);
      const target = rec(source["target"]);
      const current = rec(rec(status?.[field])["current"]);
      const name = str(source["name"]);
      if (target["averageValue"] !== undefined) return `${name}: ${quantity(current["averageValue"])}/${quantity(target["averageValue"])}`;
      return `${name}: ${percent(current["averageUtilization"]) ?? UNKNOWN}/${percent(target["averageUtilization"]) ?? "<auto>"}`;
    }
    default:
      return "<unknown type>";
  }
}

/** kubectl's formatHPAMetrics: the spec's metrics beside their statuses (matched by index). */
export function formatHpaMetrics(specs: Json[], statuses: Json[]): string {
  if (specs.length === 0) return "<none>";
  const list = specs.map((s, i) => formatMetric(s, statuses[i]));
  const max = 2;
  if (list.length > max) return `${list.slice(0, max).join(", ")} + ${list.length - max} more...`;
  return list.join(", ");
}

export const horizontalPodAutoscalerTable: KindTable = {
  columns: [
    NAME_COLUMN,
    col(
      "Reference",
      "scaleTargetRef points to the target resource to scale, and is used to the pods for which metrics should be collected, as well as to actually change the replica count.",
    ),
    col("Targets", "metrics contains the specifications for which to use to calculate the desired replica count."),
    col("MinPods", "minReplicas is the lower limit for the number of replicas to which the autoscaler can scale down."),
    col("MaxPods", "maxReplicas is the upper limit for the number of replicas to which the autoscaler can scale up."),
    col("Replicas", "currentReplicas is current number of replicas of pods managed by this autoscaler, as last seen by the autoscaler."),
    AGE_COLUMN,
  ],
  cells(hpa, now) {
    const meta = rec(hpa["metadata"]);
    const spec = rec(hpa["spec"]);
    const status = rec(hpa["status"]);
    const ref = rec(spec["scaleTargetRef"]);
    const min = spec["minReplicas"];
    return [
      str(meta["name"]),
      `${str(ref["kind"])}/${str(ref["name"])}`,
      formatHpaMetrics(recs(spec["metrics"]), recs(status["currentMetrics"])),
      typeof min === "number" ? String(min) : "<unset>",
      int(spec["maxReplicas"]),
      int(status["currentReplicas"]),
      since(meta["creationTimestamp"], now),
    ];
  },
};
