import type { Namespace } from "@choreo/kit/gen/choreo/core/v1/core";
import type { Strategy } from "../generic/strategy.js";
import { deleteNamespace } from "./purge.js";

/** Namespaces: names are DNS labels; Active at create; deletion purges their content. */
export const namespaceStrategy: Strategy<Namespace> = {
  nameRule: "label",
  prepareCreate(ns) {
    ns.spec ??= { finalizers: [] };
    ns.status = { phase: "Active", conditions: [] };
    if (ns.metadata) ns.metadata.labels["kubernetes.io/metadata.name"] = ns.metadata.name;
  },
  prepareUpdate(ns, old) {
    ns.status = old.status;
    if (ns.metadata) ns.metadata.labels["kubernetes.io/metadata.name"] = ns.metadata.name;
  },
  validate: () => [],
  delete: deleteNamespace,
};
