// CronJob columns, after kubectl's printCronJob.
import { since } from "./age.js";
import { formatLabelSelector, rec, recs, str } from "./json.js";
import { AGE_COLUMN, NAME_COLUMN, col, wide, type KindTable } from "./types.js";

/** printBoolPtr: True, False, or <unset>. */
function boolPtr(v: unknown): string {
  return v === true ? "True" : v === false ? "False" : "<unset>";
}

export const cronJobTable: KindTable = {
  columns: [
    NAME_COLUMN,
    col("Schedule", "The schedule in Cron format, see https://en.wikipedia.org/wiki/Cron."),
    col("Timezone", "The time zone name for the given schedule, see https://en.wikipedia.org/wiki/List_of_tz_database_time_zones."),
    col("Suspend", "This flag tells the controller to suspend subsequent executions, it does not apply to already started executions.", { type: "boolean" }),
    col("Active", "A list of pointers to currently running jobs.", { type: "integer" }),
    col("Last Schedule", "Information when was the last time the job was successfully scheduled."),
    AGE_COLUMN,
    wide("Containers", "Names of each container in the template."),
    wide("Images", "Images referenced by each container in the template."),
    wide("Selector", "A label query over pods that should match the pod count. Normally, the system sets this field for you."),
  ],
  cells(cj, now) {
    const meta = rec(cj["metadata"]);
    const spec = rec(cj["spec"]);
    const status = rec(cj["status"]);
    const jobSpec = rec(rec(spec["jobTemplate"])["spec"]);
    const containers = recs(rec(rec(jobSpec["template"])["spec"])["containers"]);
    const last = str(status["lastScheduleTime"]);
    return [
      str(meta["name"]),
      str(spec["schedule"]),
      typeof spec["timeZone"] === "string" ? spec["timeZone"] : "<none>",
      boolPtr(spec["suspend"]),
      recs(status["active"]).length,
      last === "" ? "<none>" : since(last, now),
      since(meta["creationTimestamp"], now),
      containers.map((c) => str(c["name"])).join(","),
      containers.map((c) => str(c["image"])).join(","),
      formatLabelSelector(jobSpec["selector"]),
    ];
  },
};
