// meta.k8s.io/v1 Table responses: one KindTable per kind, picked by kind name.
import type { KindInfo } from "@choreo/kit";
import { defaultTable, eventTable, leaseTable, namespaceTable } from "./cluster.js";
import { configMapTable } from "./configmaps.js";
import { cronJobTable } from "./cronjobs.js";
import { certificateSigningRequestTable } from "./certificatesigningrequests.js";
import { horizontalPodAutoscalerTable } from "./horizontalpodautoscalers.js";
import { rec } from "./json.js";
import { nodeTable } from "./nodes.js";
import { podDisruptionBudgetTable } from "./poddisruptionbudgets.js";
import { podTable } from "./pods.js";
import { roleBindingTable, roleTable, serviceAccountTable } from "./rbac.js";
import { secretTable } from "./secrets.js";
import { endpointsTable, serviceTable } from "./services.js";
import type { KindTable } from "./types.js";
import { daemonSetTable, deploymentTable, jobTable, replicaSetTable, replicationControllerTable } from "./workloads.js";

/** What toTable takes besides the kind and the objects. */
export interface ToTableOptions {
  /** `Metadata` (default upstream): PartialObjectMetadata per row; `Object`: the whole object; `None`: no object. */
  includeObject: "None" | "Metadata" | "Object";
  /** The list's resourceVersion (or the object's, for a get). */
  resourceVersion: string;
  continue?: string;
  /** Clock for the ages, in epoch ms; now by default. */
  now?: number;
}

const TABLES: Readonly<Record<string, KindTable>> = {
  Pod: podTable,
  Node: nodeTable,
  Service: serviceTable,
  Endpoints: endpointsTable,
  ReplicationController: replicationControllerTable,
  DaemonSet: daemonSetTable,
  ReplicaSet: replicaSetTable,
  Deployment: deploymentTable,
  Job: jobTable,
  CronJob: cronJobTable,
  Namespace: namespaceTable,
  Event: eventTable,
  Lease: leaseTable,
  ConfigMap: configMapTable,
  Secret: secretTable,
  PodDisruptionBudget: podDisruptionBudgetTable,
  HorizontalPodAutoscaler: horizontalPodAutoscalerTable,
  Role: roleTable,
  ClusterRole: roleTable,
  RoleBinding: roleBindingTable,
  ClusterRoleBinding: roleBindingTable,
  ServiceAccount: serviceAccountTable,
  CertificateSigningRequest: certificateSigningRequestTable,
};

/** The columns and cell function of a kind (NAME/AGE for kinds without their own). */
export function kindTable(kind: Pick<KindInfo, "kind">): KindTable {
  return TABLES[kind.kind] ?? defaultTable;
}

function rowObject(obj: Record<string, unknown>, include: ToTableOptions["includeObject"]): unknown {
  if (include === "None") return undefined;
  if (include === "Object") return obj;
  return { kind: "PartialObjectMetadata", apiVersion: "meta.k8s.io/v1", metadata: rec(obj["metadata"]) };
}

/** A meta.k8s.io/v1 Table of Kubernetes JSON objects, with kubectl's columns for the kind. */
export function toTable(kind: Pick<KindInfo, "kind">, objects: Record<string, unknown>[], opts: ToTableOptions): Record<string, unknown> {
  const table = kindTable(kind);
  const now = opts.now ?? Date.now();
  const metadata: Record<string, unknown> = { resourceVersion: opts.resourceVersion };
  if (opts.continue) metadata["continue"] = opts.continue;
  return {
    kind: "Table",
    apiVersion: "meta.k8s.io/v1",
    metadata,
    columnDefinitions: table.columns.map((c) => ({ ...c })),
    rows: objects.map((obj) => {
      const object = rowObject(obj, opts.includeObject);
      return object === undefined ? { cells: table.cells(obj, now) } : { cells: table.cells(obj, now), object };
    }),
  };
}
