// What a request asks, in the authorizer's terms: from an HTTP route, or from
// a unary api method's request (gRPC, NATS).
import { kindByResource, kindOf, metaOf, type KindInfo } from "@choreo/kit";
import type { Method } from "@choreo/kit/client";
import type { CreateRequest, UpdateRequest, WatchRequest } from "@choreo/kit/gen/choreo/api/v1/api";
import type { Attributes, UserInfo } from "./types.js";

/** The verb of an HTTP request on a resource path, as the apiserver's RequestInfoFactory. */
export function httpVerb(method: string, named: boolean, watching: boolean): string {
  switch (method) {
    case "GET":
    case "HEAD":
      return watching ? "watch" : named ? "get" : "list";
    case "POST":
      return "create";
    case "PUT":
      return "update";
    case "PATCH":
      return "patch";
    case "DELETE":
      return named ? "delete" : "deletecollection";
    default:
      return method.toLowerCase();
  }
}

/** Attributes of a request on a kind. */
export function resourceAttributes(
  user: UserInfo,
  verb: string,
  info: Pick<KindInfo, "group" | "version" | "resource">,
  namespace: string,
  name: string,
  subresource = "",
): Attributes {
  return { user, verb, resourceRequest: true, apiGroup: info.group, apiVersion: info.version, resource: info.resource, subresource, namespace, name, path: "" };
}

/** Attributes of a request on a path that names no resource (`/version`, `/api`, `/openapi/v2`). */
export function nonResourceAttributes(user: UserInfo, method: string, path: string): Attributes {
  return {
    user,
    verb: method.toLowerCase(),
    resourceRequest: false,
    apiGroup: "",
    apiVersion: "",
    resource: "",
    subresource: "",
    namespace: "",
    name: "",
    path,
  };
}

function byResource(resource: string): Pick<KindInfo, "group" | "version" | "resource"> {
  return kindByResource(resource) ?? { group: "", version: "", resource };
}

/**
 * The attributes of a unary api method's request (what gRPC and NATS
 * carry). A create or update names its object's kind, namespace and name;
 * the others name the resource. `patch` of a subresource, bind
 * (`pods/binding`), evict (`pods/eviction`) and scale (`<kind>/scale`) map as over HTTP.
 */
export function methodAttributes(user: UserInfo, method: Method | "watch", req: unknown): Attributes {
  const r = req as { resource?: string; namespace?: string; name?: string; subresource?: string };
  switch (method) {
    case "create":
    case "update":
    case "updateStatus": {
      const o = (req as CreateRequest | UpdateRequest).object;
      if (!o?.kind) return resourceAttributes(user, method === "create" ? "create" : "update", { group: "", version: "", resource: "" }, "", "");
      const info = kindOf(o);
      const meta = metaOf(o);
      // A create names no object, as the apiserver's attributes for POST to a collection.
      return resourceAttributes(
        user,
        method === "create" ? "create" : "update",
        info,
        info.namespaced ? meta.namespace : "",
        method === "create" ? "" : meta.name,
        method === "updateStatus" ? "status" : "",
      );
    }
    case "get":
      return resourceAttributes(user, "get", byResource(r.resource ?? ""), r.namespace ?? "", r.name ?? "");
    case "list":
    case "watch": {
      const a = resourceAttributes(user, method, byResource(r.resource ?? ""), r.namespace ?? "", "");
      const fieldSelector = (req as WatchRequest).fieldSelector;
      return fieldSelector ? { ...a, fieldSelector } : a;
    }
    case "patch":
      return resourceAttributes(user, "patch", byResource(r.resource ?? ""), r.namespace ?? "", r.name ?? "", r.subresource ?? "");
    case "delete":
      return resourceAttributes(user, "delete", byResource(r.resource ?? ""), r.namespace ?? "", r.name ?? "");
    case "deleteCollection":
      return resourceAttributes(user, "deletecollection", byResource(r.resource ?? ""), r.namespace ?? "", "");
    case "bind":
      return resourceAttributes(user, "create", byResource("pods"), r.namespace ?? "", r.name ?? "", "binding");
    case "evict":
      return resourceAttributes(user, "create", byResource("pods"), r.namespace ?? "", r.name ?? "", "eviction");
    case "getScale":
      return resourceAttributes(user, "get", byResource(r.resource ?? ""), r.namespace ?? "", r.name ?? "", "scale");
    case "updateScale":
      return resourceAttributes(user, "update", byResource(r.resource ?? ""), r.namespace ?? "", r.name ?? "", "scale");
  }
}
