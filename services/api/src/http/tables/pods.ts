// Pod columns, after kubectl's printPod (pkg/printers/internalversion/printers.go).
import { since } from "./age.js";
import { bool, int, orNone, rec, recs, str, type Json } from "./json.js";
import { AGE_COLUMN, NAME_COLUMN, col, wide, type KindTable } from "./types.js";

/** The READY, STATUS and RESTARTS of a pod, as kubectl computes them. */
export function podStatus(pod: Json, now: number): { ready: string; reason: string; restarts: string } {
  const spec = rec(pod["spec"]);
  const status = rec(pod["status"]);
  const meta = rec(pod["metadata"]);
  const total = recs(spec["containers"]).length;
  let reason = str(status["reason"]) || str(status["phase"]);
  let restarts = 0;
  let readyCount = 0;
  let lastRestart = 0;
  const noteRestart = (c: Json): void => {
    const finished = Date.parse(str(rec(rec(c["lastState"])["terminated"])["finishedAt"]));
    if (!Number.isNaN(finished) && finished > lastRestart) lastRestart = finished;
  };

  let initializing = false;
  const inits = recs(status["initContainerStatuses"]);
  const initTotal = recs(spec["initContainers"]).length;
  for (let i = 0; i < inits.length; i++) {
    const c = inits[i];
    restarts += int(c["restartCount"]);
    noteRestart(c);
    const state = rec(c["state"]);
    const terminated = state["terminated"] === undefined ? undefined : rec(state["terminated"]);
    const waiting = state["waiting"] === undefined ? undefined : rec(state["waiting"]);
    if (terminated && int(terminated["exitCode"]) === 0) continue;
    initializing = true;
    if (terminated) {
      if (str(terminated["reason"])) reason = `Init:${str(terminated["reason"])}`;
      else if (int(terminated["signal"]) !== 0) reason = `Init:Signal:${int(terminated["signal"])}`;
      else reason = `Init:ExitCode:${int(terminated["exitCode"])}`;
    } else if (waiting && str(waiting["reason"]) && str(waiting["reason"]) !== "PodInitializing") {
      reason = `Init:${str(waiting["reason"])}`;
    } else {
      reason = `Init:${i}/${initTotal}`;
    }
    break;
  }

  const conditions = recs(status["conditions"]);
  const initializedTrue = conditions.some((c) => str(c["type"]) === "Initialized" && str(c["status"]) === "True");
  if (!initializing || initializedTrue) {
    restarts = 0;
    let hasRunning = false;
    const containers = recs(status["containerStatuses"]);
    for (let i = containers.length - 1; i >= 0; i--) {
      const c = containers[i];
      restarts += int(c["restartCount"]);
      noteRestart(c);
      const state = rec(c["state"]);
      const waiting = rec(state["waiting"]);
      const terminated = state["terminated"] === undefined ? undefined : rec(state["terminated"]);
      if (str(waiting["reason"])) reason = str(waiting["reason"]);
      else if (terminated && str(terminated["reason"])) reason = str(terminated["reason"]);
      else if (terminated) {
        reason = int(terminated["signal"]) !== 0 ? `Signal:${int(terminated["signal"])}` : `ExitCode:${int(terminated["exitCode"])}`;
      } else if (bool(c["ready"]) && state["running"] !== undefined) {
        hasRunning = true;
        readyCount++;
      }
    }
    if (reason === "Completed" && hasRunning) {
      const podReady = conditions.some((c) => str(c["type"]) === "Ready" && str(c["status"]) === "True");
      reason = podReady ? "Running" : "NotReady";
    }
  }

  if (str(meta["deletionTimestamp"])) reason = str(status["reason"]) === "NodeLost" ? "Unknown" : "Terminating";
  const restartsText = restarts !== 0 && lastRestart > 0 ? `${restarts} (${since(new Date(lastRestart).toISOString(), now)} ago)` : String(restarts);
  return { ready: `${readyCount}/${total}`, reason, restarts: restartsText };
}

function readinessGates(pod: Json): string {
  const gates = recs(rec(pod["spec"])["readinessGates"]);
  if (gates.length === 0) return "<none>";
  const conditions = recs(rec(pod["status"])["conditions"]);
  const met = gates.filter((g) => conditions.some((c) => str(c["type"]) === str(g["conditionType"]) && str(c["status"]) === "True")).length;
  return `${met}/${gates.length}`;
}

export const podTable: KindTable = {
  columns: [
    NAME_COLUMN,
    col("Ready", "The aggregate readiness state of this pod for accepting traffic."),
    col("Status", "The aggregate status of the containers in this pod."),
    col("Restarts", "The number of times the containers in this pod have been restarted and when the last container in this pod has restarted."),
    AGE_COLUMN,
    wide("IP", "podIP address allocated to the pod. Routable at least within the cluster. Empty if not yet allocated."),
    wide("Node", "NodeName indicates in which node this pod is scheduled."),
    wide(
      "Nominated Node",
      "nominatedNodeName is set only when this pod preempts other pods on the node, but it cannot be scheduled right away as preemption victims receive their graceful termination periods.",
    ),
    wide("Readiness Gates", "If specified, all readiness gates will be evaluated for pod readiness."),
  ],
  cells(pod, now) {
    const meta = rec(pod["metadata"]);
    const spec = rec(pod["spec"]);
    const status = rec(pod["status"]);
    const s = podStatus(pod, now);
    return [
      str(meta["name"]),
      s.ready,
      s.reason,
      s.restarts,
      since(meta["creationTimestamp"], now),
      orNone(str(status["podIP"])),
      orNone(str(spec["nodeName"])),
      orNone(str(status["nominatedNodeName"])),
      readinessGates(pod),
    ];
  },
};
