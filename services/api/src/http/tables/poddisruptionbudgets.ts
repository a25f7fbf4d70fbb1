// PodDisruptionBudget columns, after kubectl's printPodDisruptionBudget.
import { since } from "./age.js";
import { rec, str } from "./json.js";
import { AGE_COLUMN, NAME_COLUMN, col, type KindTable } from "./types.js";

/** An IntOrString as printed: its value, or N/A when unset. */
function intOrString(v: unknown): string {
  return typeof v === "number" || typeof v === "string" ? String(v) : "N/A";
}

export const podDisruptionBudgetTable: KindTable = {
  columns: [
    NAME_COLUMN,
    col("Min Available", "The minimum number of pods that must be available."),
    col("Max Unavailable", "The maximum number of pods that may be unavailable."),
    col("Allowed Disruptions", "Calculated number of pods that may be disrupted at this time.", { type: "integer" }),
    AGE_COLUMN,
  ],
  cells(pdb, now) {
    const meta = rec(pdb["metadata"]);
    const spec = rec(pdb["spec"]);
    const status = rec(pdb["status"]);
    const allowed = status["disruptionsAllowed"];
    return [
      str(meta["name"]),
      intOrString(spec["minAvailable"]),
      intOrString(spec["maxUnavailable"]),
      typeof allowed === "number" ? allowed : 0,
      since(meta["creationTimestamp"], now),
    ];
  },
};
