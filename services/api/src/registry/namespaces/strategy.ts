import type { Namespace } from "@choreo/kit/gen/choreo/core/v1/core";
import { canonicalJson } from "../shared/canonical.js";
import type { Strategy } from "../generic/strategy.js";
import { DEFAULT_POD_SECURITY, policyOf } from "../pods/pod-security/policy.js";
import { deleteNamespace } from "./purge.js";

/** The errors of a namespace's pod-security.kubernetes.io labels (an unknown level or version). */
const labelErrors = (ns: Namespace | undefined) => policyOf(ns?.metadata?.labels ?? {}, DEFAULT_POD_SECURITY.defaults).errors;

/**
 * Namespaces: names are DNS labels; Active at create; deletion purges their
 * content. Pod Security labels must name a level and version (422), on
 * create and on an update that changes them, as Kubernetes' admission.
 */
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
  validate(ns, old) {
    const errors = labelErrors(ns);
    if (errors.length === 0 || (old && canonicalJson(labelErrors(old)) === canonicalJson(errors))) return [];
    return errors;
  },
  delete: deleteNamespace,
};
