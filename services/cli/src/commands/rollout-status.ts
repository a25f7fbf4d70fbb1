// What `choreo rollout status` prints for an object: kubectl's status viewers
// (k8s.io/kubectl/pkg/polymorphichelpers/rollout_status.go), word for word —
// one message per observed state, `done` once the rollout finished, an error
// when it cannot finish (a progress deadline exceeded, a strategy without
// rolling updates).
import { CliError } from "../client.js";

/** One look at an object: the line to print and whether the rollout is over. */
export interface RolloutStatus {
  message: string;
  done: boolean;
}

type Obj = Record<string, unknown>;

const num = (o: Obj | undefined, k: string): number => Number(o?.[k] ?? 0);
const field = (o: Obj, k: string): Obj => (o[k] ?? {}) as Obj;

/** The kinds kubectl has a status viewer for. */
export const ROLLOUT_KINDS = ["Deployment", "DaemonSet", "StatefulSet"] as const;

/** The rollout status of `obj` (a Deployment, DaemonSet or StatefulSet as JSON). Throws a CliError kubectl's words when it cannot finish. */
export function rolloutStatus(obj: Obj): RolloutStatus {
  const kind = String(obj["kind"] ?? "");
  const meta = field(obj, "metadata");
  const name = String(meta["name"] ?? "");
  const spec = field(obj, "spec");
  const status = field(obj, "status");
  const observed = num(meta, "generation") <= num(status, "observedGeneration");
  switch (kind) {
    case "Deployment": {
      if (!observed) return { message: "Waiting for deployment spec update to be observed...", done: false };
      const conditions = (status["conditions"] ?? []) as Obj[];
      const progressing = conditions.find((c) => c["type"] === "Progressing");
      if (progressing?.["reason"] === "ProgressDeadlineExceeded") throw new CliError(`error: deployment "${name}" exceeded its progress deadline`);
      const updated = num(status, "updatedReplicas");
      if (spec["replicas"] !== undefined && updated < num(spec, "replicas"))
        return {
          message: `Waiting for deployment "${name}" rollout to finish: ${updated} out of ${num(spec, "replicas")} new replicas have been updated...`,
          done: false,
        };
      if (num(status, "replicas") > updated)
        return {
          message: `Waiting for deployment "${name}" rollout to finish: ${num(status, "replicas") - updated} old replicas are pending termination...`,
          done: false,
        };
      if (num(status, "availableReplicas") < updated)
        return {
          message: `Waiting for deployment "${name}" rollout to finish: ${num(status, "availableReplicas")} of ${updated} updated replicas are available...`,
          done: false,
        };
      return { message: `deployment "${name}" successfully rolled out`, done: true };
    }
    case "DaemonSet": {
      const strategy = String(field(spec, "updateStrategy")["type"] ?? "RollingUpdate");
      if (strategy !== "RollingUpdate") throw new CliError("error: rollout status is only available for RollingUpdate strategy type");
      if (!observed) return { message: "Waiting for daemon set spec update to be observed...", done: false };
      const desired = num(status, "desiredNumberScheduled");
      if (num(status, "updatedNumberScheduled") < desired)
        return {
          message: `Waiting for daemon set "${name}" rollout to finish: ${num(status, "updatedNumberScheduled")} out of ${desired} new pods have been updated...`,
          done: false,
        };
      if (num(status, "numberAvailable") < desired)
        return {
          message: `Waiting for daemon set "${name}" rollout to finish: ${num(status, "numberAvailable")} of ${desired} updated pods are available...`,
          done: false,
        };
      return { message: `daemon set "${name}" successfully rolled out`, done: true };
    }
    case "StatefulSet": {
      const strategy = String(field(spec, "updateStrategy")["type"] ?? "RollingUpdate");
      if (strategy !== "RollingUpdate") throw new CliError("error: rollout status is only available for RollingUpdate strategy type");
      if (num(status, "observedGeneration") === 0 || num(meta, "generation") > num(status, "observedGeneration"))
        return { message: "Waiting for statefulset spec update to be observed...", done: false };
      const replicas = spec["replicas"] === undefined ? 1 : num(spec, "replicas");
      if (num(status, "readyReplicas") < replicas)
        return { message: `Waiting for ${replicas - num(status, "readyReplicas")} pods to be ready...`, done: false };
      const partition = field(field(spec, "updateStrategy"), "rollingUpdate")["partition"];
      if (partition !== undefined && Number(partition) > 0) {
        if (num(status, "updatedReplicas") < replicas - Number(partition))
          return {
            message: `Waiting for partitioned roll out to finish: ${num(status, "updatedReplicas")} out of ${replicas - Number(partition)} new pods have been updated...`,
            done: false,
          };
        return { message: `partitioned roll out complete: ${num(status, "updatedReplicas")} new pods have been updated...`, done: true };
      }
      if (status["updateRevision"] !== status["currentRevision"])
        return {
          message: `waiting for statefulset rolling update to complete ${num(status, "updatedReplicas")} pods at revision ${String(status["updateRevision"] ?? "")}...`,
          done: false,
        };
      return {
        message: `statefulset rolling update complete ${num(status, "currentReplicas")} pods at revision ${String(status["currentRevision"] ?? "")}...`,
        done: true,
      };
    }
    default:
      throw new CliError(`error: no status viewer has been implemented for ${kind}`);
  }
}
