// Whether what a ServiceAccount token is bound to still exists: the
// account with the token's uid and, for a pod-bound token, the pod with
// its uid and not being deleted — asked of the registry itself.
import { isNotFound, unwrap } from "@choreo/kit";
import type { ApiHandlers } from "../handlers/api-handlers.js";
import type { BindingCheck } from "./service-account-tokens.js";

export function serviceAccountBindingCheck(handlers: Pick<ApiHandlers, "get">): BindingCheck {
  const uidOf = async (resource: string, namespace: string, name: string): Promise<{ uid: string; deleting: boolean } | undefined> => {
    try {
      const meta = unwrap(await handlers.get({ resource, namespace, name })).metadata;
      return { uid: meta?.uid ?? "", deleting: !!meta?.deletionTimestamp };
    } catch (err) {
      if (isNotFound(err)) return undefined;
      throw err;
    }
  };
  return async (b) => {
    const sa = await uidOf("serviceaccounts", b.namespace, b.serviceAccount.name);
    if (!sa || sa.uid !== b.serviceAccount.uid) return false;
    if (!b.pod) return true;
    const pod = await uidOf("pods", b.namespace, b.pod.name);
    return !!pod && pod.uid === b.pod.uid && !pod.deleting;
  };
}
