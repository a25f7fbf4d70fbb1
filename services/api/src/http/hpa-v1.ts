// HorizontalPodAutoscaler as autoscaling/v1, the version kubectl 1.32's
// `kubectl autoscale` writes (its typed client posts autoscaling/v1, in
// protobuf). The kind is stored and served as autoscaling/v2; this door
// converts as Kubernetes' pkg/apis/autoscaling/v1 conversion does for what v1
// holds — targetCPUUtilizationPercentage is the Resource cpu Utilization
// metric, currentCPUUtilizationPercentage its current value — on create and
// get. Other verbs answer 405 naming autoscaling/v2.
import type { IncomingMessage, ServerResponse } from "node:http";
import { badRequest, methodNotAllowed } from "@choreo/kit";
import { fromKubeJson, toKubeJson, type KubeJson } from "@choreo/kit/kube-json";
import type { ApiHandlers } from "../handlers/api-handlers.js";
import { decodeBody, readBody } from "./body.js";
import { dryRunOf, fieldManagerOf } from "./context.js";
import { sendJson } from "./respond.js";
import { decodeSegment } from "./routes.js";

const PATH = /^\/apis\/autoscaling\/v1\/namespaces\/([^/]+)\/horizontalpodautoscalers(?:\/([^/]+))?\/?$/;

type Json = Record<string, unknown>;
const rec = (v: unknown): Json => (v !== null && typeof v === "object" && !Array.isArray(v) ? (v as Json) : {});

/** Whether a path is an autoscaling/v1 HorizontalPodAutoscaler path (this door's). */
export function isHpaV1Path(pathname: string): boolean {
  return PATH.test(pathname);
}

/** The namespace and name an autoscaling/v1 HPA path addresses (for authorization); undefined when it is not one. */
export function hpaV1Route(pathname: string): { namespace: string; name: string; subresource: string } | undefined {
  const m = PATH.exec(pathname);
  if (!m) return undefined;
  const dec = (s: string | undefined): string => {
    try {
      return decodeURIComponent(s ?? "");
    } catch {
      return s ?? "";
    }
  };
  return { namespace: dec(m[1]), name: dec(m[2]), subresource: "" };
}

/** An autoscaling/v1 HPA as autoscaling/v2 (Kubernetes' Convert_v1_HorizontalPodAutoscaler_To_autoscaling_…). */
export function hpaV1ToV2(v1: Json): Json {
  const spec = rec(v1["spec"]);
  const target = spec["targetCPUUtilizationPercentage"];
  const v2spec: Json = {
    scaleTargetRef: spec["scaleTargetRef"],
    ...(spec["minReplicas"] !== undefined ? { minReplicas: spec["minReplicas"] } : {}),
    maxReplicas: spec["maxReplicas"],
  };
  if (typeof target === "number")
    v2spec["metrics"] = [{ type: "Resource", resource: { name: "cpu", target: { type: "Utilization", averageUtilization: target } } }];
  return { apiVersion: "autoscaling/v2", kind: "HorizontalPodAutoscaler", metadata: v1["metadata"] ?? {}, spec: v2spec };
}

/** An autoscaling/v2 HPA as autoscaling/v1: the cpu Utilization metric and its current value. */
export function hpaV2ToV1(v2: Json): Json {
  const spec = rec(v2["spec"]);
  const status = rec(v2["status"]);
  const cpu = (Array.isArray(spec["metrics"]) ? (spec["metrics"] as unknown[]) : [])
    .map(rec)
    .find((m) => m["type"] === "Resource" && rec(m["resource"])["name"] === "cpu" && rec(rec(m["resource"])["target"])["type"] === "Utilization");
  const current = (Array.isArray(status["currentMetrics"]) ? (status["currentMetrics"] as unknown[]) : [])
    .map(rec)
    .find((m) => m["type"] === "Resource" && rec(m["resource"])["name"] === "cpu");
  const utilization = rec(rec(current?.["resource"])["current"])["averageUtilization"];
  const target = rec(rec(cpu?.["resource"])["target"])["averageUtilization"];
  return {
    kind: "HorizontalPodAutoscaler",
    apiVersion: "autoscaling/v1",
    metadata: v2["metadata"] ?? {},
    spec: {
      scaleTargetRef: spec["scaleTargetRef"],
      ...(spec["minReplicas"] !== undefined ? { minReplicas: spec["minReplicas"] } : {}),
      maxReplicas: spec["maxReplicas"],
      ...(typeof target === "number" ? { targetCPUUtilizationPercentage: target } : {}),
    },
    status: {
      ...(status["observedGeneration"] !== undefined ? { observedGeneration: status["observedGeneration"] } : {}),
      ...(status["lastScaleTime"] !== undefined ? { lastScaleTime: status["lastScaleTime"] } : {}),
      currentReplicas: status["currentReplicas"] ?? 0,
      desiredReplicas: status["desiredReplicas"] ?? 0,
      ...(typeof utilization === "number" ? { currentCPUUtilizationPercentage: utilization } : {}),
    },
  };
}

/** POST (create) and GET (one) of autoscaling/v1 HPAs, answered in JSON. */
export async function serveHpaV1(req: IncomingMessage, res: ServerResponse, url: URL, handlers: ApiHandlers): Promise<void> {
  const m = PATH.exec(url.pathname);
  const namespace = decodeSegment(m?.[1] ?? "");
  const name = decodeSegment(m?.[2] ?? "");
  if (req.method === "GET" && name !== "") {
    const got = await handlers.get({ resource: "horizontalpodautoscalers", namespace, name });
    return sendJson(res, 200, hpaV2ToV1(toKubeJson(got)));
  }
  if (req.method === "POST" && name === "") {
    const body = decodeBody(req, await readBody(req));
    const v1 = rec(body);
    if ((v1["kind"] ?? "HorizontalPodAutoscaler") !== "HorizontalPodAutoscaler")
      throw badRequest(`the body is a ${String(v1["kind"])} but the request is for horizontalpodautoscalers`);
    const v2 = hpaV1ToV2(v1);
    const meta = rec(v2["metadata"]);
    if (meta["namespace"] !== undefined && meta["namespace"] !== "" && meta["namespace"] !== namespace)
      throw badRequest("the namespace of the provided object does not match the namespace sent on the request");
    v2["metadata"] = { ...meta, namespace };
    const created = await handlers.create({ object: fromKubeJson(v2 as KubeJson), dryRun: dryRunOf(url), fieldManager: fieldManagerOf({ url, req }) });
    return sendJson(res, 201, hpaV2ToV1(toKubeJson(created)));
  }
  throw methodNotAllowed(`${req.method ?? ""} of autoscaling/v1 horizontalpodautoscalers is not served: use autoscaling/v2`);
}
