import { ApiError, emptyMeta, kindByResource, type KindInfo } from "@choreo/kit";
import type { Namespace } from "@choreo/kit/gen/choreo/core/v1/core";
import { SYSTEM_NAMESPACES } from "./namespaces/purge.js";
import { ensureBootstrapPolicy } from "./rbac/bootstrap.js";
import type { Registry } from "./registry.js";

/** Creates the system namespaces and the default RBAC policy (idempotent) and resumes interrupted namespace purges. */
export async function bootstrap(registry: Registry): Promise<void> {
  const info = kindByResource("namespaces") as KindInfo;
  for (const name of SYSTEM_NAMESPACES) {
    const ns: Namespace = { apiVersion: "v1", kind: "Namespace", metadata: emptyMeta({ name }), spec: undefined, status: undefined };
    try {
      await registry.createObject(info, ns);
    } catch (err) {
      if (!(err instanceof ApiError && err.reason === "AlreadyExists")) throw err;
    }
  }
  await ensureBootstrapPolicy(registry);
  const page = await registry.page(info, { namespace: "", limit: 0 });
  for (const ns of page.items) {
    if (ns.metadata?.deletionTimestamp) void registry.purgeNamespace(ns.metadata.name).catch(() => undefined);
  }
}
