// ReplicationController, ReplicaSet, Deployment, DaemonSet and Job columns, after kubectl's printers.
import { between, since } from "./age.js";
import { formatLabelSelector, formatLabels, int, rec, recs, str, type Json } from "./json.js";
import { AGE_COLUMN, NAME_COLUMN, col, wide, type KindTable } from "./types.js";

const CONTAINERS = wide("Containers", "Names of each container in the template.");
const IMAGES = wide("Images", "Images referenced by each container in the template.");
const SELECTOR = wide("Selector", "Label selector for pods. Existing pods selected by this label selector will be controlled by this object.");

/** The template's container names and images, comma-joined. */
function templateContainers(obj: Json): [string, string] {
  const containers = recs(rec(rec(rec(obj["spec"])["template"])["spec"])["containers"]);
  return [containers.map((c) => str(c["name"])).join(","), containers.map((c) => str(c["image"])).join(",")];
}

export const replicationControllerTable: KindTable = {
  columns: [
    NAME_COLUMN,
    col("Desired", "Replicas is the number of desired replicas.", { type: "integer" }),
    col("Current", "Replicas is the most recently observed number of replicas.", { type: "integer" }),
    col("Ready", "The number of ready replicas for this replication controller.", { type: "integer" }),
    AGE_COLUMN,
    CONTAINERS,
    IMAGES,
    SELECTOR,
  ],
  cells(rc, now) {
    const meta = rec(rc["metadata"]);
    const spec = rec(rc["spec"]);
    const status = rec(rc["status"]);
    // An unset replicas means Kubernetes' default of 1.
    const desired = spec["replicas"] === undefined ? 1 : int(spec["replicas"]);
    return [
      str(meta["name"]),
      desired,
      int(status["replicas"]),
      int(status["readyReplicas"]),
      since(meta["creationTimestamp"], now),
      ...templateContainers(rc),
      formatLabels(spec["selector"]),
    ];
  },
};

/** spec.replicas, Kubernetes' default of 1 when unset. */
function desiredReplicas(spec: Json): number {
  return spec["replicas"] === undefined ? 1 : int(spec["replicas"]);
}

export const replicaSetTable: KindTable = {
  columns: [
    NAME_COLUMN,
    col("Desired", "Replicas is the number of desired pods. This is a pointer to distinguish between explicit zero and unspecified. Defaults to 1.", {
      type: "integer",
    }),
    col("Current", "Replicas is the most recently observed number of non-terminating pods.", { type: "integer" }),
    col("Ready", "The number of non-terminating pods targeted by this ReplicaSet with a Ready Condition.", { type: "integer" }),
    AGE_COLUMN,
    CONTAINERS,
    IMAGES,
    SELECTOR,
  ],
  cells(rs, now) {
    const meta = rec(rs["metadata"]);
    const spec = rec(rs["spec"]);
    const status = rec(rs["status"]);
    return [
      str(meta["name"]),
      desiredReplicas(spec),
      int(status["replicas"]),
      int(status["readyReplicas"]),
      since(meta["creationTimestamp"], now),
      ...templateContainers(rs),
      formatLabelSelector(spec["selector"]),
    ];
  },
};

export const deploymentTable: KindTable = {
  columns: [
    NAME_COLUMN,
    col("Ready", "Number of the pod with ready state"),
    col("Up-to-date", "Total number of non-terminating pods targeted by this deployment that have the desired template spec.", { type: "integer" }),
    col("Available", "Total number of available non-terminating pods (ready for at least minReadySeconds) targeted by this deployment.", {
      type: "integer",
    }),
    AGE_COLUMN,
    CONTAINERS,
    IMAGES,
    SELECTOR,
  ],
  cells(d, now) {
    const meta = rec(d["metadata"]);
    const spec = rec(d["spec"]);
    const status = rec(d["status"]);
    return [
      str(meta["name"]),
      `${int(status["readyReplicas"])}/${desiredReplicas(spec)}`,
      int(status["updatedReplicas"]),
      int(status["availableReplicas"]),
      since(meta["creationTimestamp"], now),
      ...templateContainers(d),
      formatLabelSelector(spec["selector"]),
    ];
  },
};

export const daemonSetTable: KindTable = {
  columns: [
    NAME_COLUMN,
    col("Desired", "The total number of nodes that should be running the daemon pod.", { type: "integer" }),
    col("Current", "The number of nodes that are running at least 1 daemon pod and are supposed to run the daemon pod.", { type: "integer" }),
    col("Ready", "The number of nodes that should be running the daemon pod and have one or more of the daemon pod running and ready.", { type: "integer" }),
    col("Up-to-date", "The total number of nodes that are running updated daemon pod.", { type: "integer" }),
    col("Available", "The number of nodes that should be running the daemon pod and have one or more of the daemon pod running and available.", {
      type: "integer",
    }),
    col("Node Selector", "NodeSelector is a selector which must be true for the pod to fit on a node."),
    AGE_COLUMN,
    CONTAINERS,
    IMAGES,
    SELECTOR,
  ],
  cells(ds, now) {
    const meta = rec(ds["metadata"]);
    const spec = rec(ds["spec"]);
    const status = rec(ds["status"]);
    return [
      str(meta["name"]),
      int(status["desiredNumberScheduled"]),
      int(status["currentNumberScheduled"]),
      int(status["numberReady"]),
      int(status["updatedNumberScheduled"]),
      int(status["numberAvailable"]),
      formatLabels(rec(rec(spec["template"])["spec"])["nodeSelector"]),
      since(meta["creationTimestamp"], now),
      ...templateContainers(ds),
      formatLabelSelector(spec["selector"]),
    ];
  },
};

function hasCondition(job: Json, type: string): boolean {
  return recs(rec(job["status"])["conditions"]).some((c) => str(c["type"]) === type && str(c["status"]) === "True");
}

/** STATUS of a job: Complete, Failed, Terminating, Suspended, FailureTarget, SuccessCriteriaMet or Running. */
export function jobStatus(job: Json): string {
  if (hasCondition(job, "Complete")) return "Complete";
  if (hasCondition(job, "Failed")) return "Failed";
  if (str(rec(job["metadata"])["deletionTimestamp"])) return "Terminating";
  if (hasCondition(job, "Suspended")) return "Suspended";
  if (hasCondition(job, "FailureTarget")) return "FailureTarget";
  if (hasCondition(job, "SuccessCriteriaMet")) return "SuccessCriteriaMet";
  return "Running";
}

/** COMPLETIONS: `succeeded/completions`, or `succeeded/1 of parallelism` for work queues. */
export function jobCompletions(job: Json): string {
  const spec = rec(job["spec"]);
  const succeeded = int(rec(job["status"])["succeeded"]);
  if (spec["completions"] !== undefined && spec["completions"] !== null) return `${succeeded}/${int(spec["completions"])}`;
  const parallelism = int(spec["parallelism"]);
  return parallelism > 1 ? `${succeeded}/1 of ${parallelism}` : `${succeeded}/1`;
}

export const jobTable: KindTable = {
  columns: [
    NAME_COLUMN,
    col("Status", "Status of the job."),
    col("Completions", "The completion status of the job."),
    col("Duration", "Time required to complete the job."),
    AGE_COLUMN,
    CONTAINERS,
    IMAGES,
    SELECTOR,
  ],
  cells(job, now) {
    const meta = rec(job["metadata"]);
    const status = rec(job["status"]);
    return [
      str(meta["name"]),
      jobStatus(job),
      jobCompletions(job),
      between(status["startTime"], status["completionTime"], now),
      since(meta["creationTimestamp"], now),
      ...templateContainers(job),
      formatLabelSelector(rec(job["spec"])["selector"]),
    ];
  },
};
