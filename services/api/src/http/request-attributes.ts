// The authorizer's view of an HTTP request: which verb on which resource
// (or which non-resource path) a path and method ask for.
import { resourceAttributes, httpVerb, nonResourceAttributes } from "../auth/attributes.js";
import type { Attributes, UserInfo } from "../auth/types.js";
import { parseMetricsPath, isMetricsPath } from "../metrics-api/index.js";
import { flag } from "./context.js";
import { hpaV1Route } from "./hpa-v1.js";
import { isReviewPath, reviewAttributes } from "./reviews/door.js";
import { isOpenPath, parseRoute } from "./routes.js";
import { STREAM_SUBRESOURCES } from "./streams/index.js";

const METRICS = { group: "metrics.k8s.io", version: "v1beta1" };

/**
 * What `method` on `url` asks, as the apiserver's RequestInfo: undefined for
 * the open paths (health, version), which anyone may read. Streams
 * (exec, attach, portforward) are `create` whatever the method, as the
 * apiserver checks WebSocket upgrades since 1.31. A path that addresses
 * nothing is a non-resource request (a 403 for most users, as Kubernetes).
 */
export function requestAttributes(user: UserInfo, method: string, url: URL): Attributes | undefined {
  const path = url.pathname;
  if (isOpenPath(path)) return undefined;
  const watching = flag(url, "watch");
  if (isMetricsPath(path)) {
    const m = parseMetricsPath(path);
    if (m?.type === "nodes") return resourceAttributes(user, httpVerb(method, !!m.name, watching), { ...METRICS, resource: "nodes" }, "", m.name);
    if (m?.type === "pods") return resourceAttributes(user, httpVerb(method, !!m.name, watching), { ...METRICS, resource: "pods" }, m.namespace, m.name);
    return nonResourceAttributes(user, method, path);
  }
  // The reviews (authorization.k8s.io, authentication.k8s.io): `create` of the review resource.
  if (isReviewPath(path)) return reviewAttributes(user, method, path) ?? nonResourceAttributes(user, method, path);
  const hpa = hpaV1Route(path);
  if (hpa)
    return resourceAttributes(
      user,
      httpVerb(method, !!hpa.name, watching),
      { group: "autoscaling", version: "v1", resource: "horizontalpodautoscalers" },
      hpa.namespace,
      hpa.name,
      hpa.subresource,
    );
  let route;
  try {
    route = parseRoute(path);
  } catch {
    return nonResourceAttributes(user, method, path);
  }
  if (route.type !== "resource") return nonResourceAttributes(user, method, path);
  const streamed = (STREAM_SUBRESOURCES as readonly string[]).includes(route.subresource);
  const verb = streamed ? "create" : httpVerb(method, !!route.name, watching);
  const a = resourceAttributes(user, verb, route.info, route.namespace, route.name, route.subresource);
  const fieldSelector = url.searchParams.get("fieldSelector");
  return fieldSelector ? { ...a, fieldSelector } : a;
}
