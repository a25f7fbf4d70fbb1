import { ApiError, emptyMeta, forbidden, KINDS, type AnyObject, type KindInfo } from "@choreo/kit";
import { nowRfc3339 } from "@choreo/kit/apimachinery";
import type { Current, GenericStore } from "../generic/store.js";

/** The namespaces that exist from the start and may not be deleted. */
export const SYSTEM_NAMESPACES = ["default", "kube-system", "kube-public", "kube-node-lease"];

/**
 * A namespace's deletion: it turns Terminating (no new content), then
 * everything in it is removed and the namespace last. The purge runs in the
 * background; bootstrap resumes the purges a restart interrupted.
 */
export async function deleteNamespace(store: GenericStore, info: KindInfo, cur: Current): Promise<AnyObject> {
  const name = cur.value.metadata?.name ?? "";
  if (SYSTEM_NAMESPACES.includes(name)) throw forbidden(`namespaces "${name}" is forbidden: this namespace may not be deleted`);
  let v = cur.value;
  if (!v.metadata?.deletionTimestamp) {
    const next = structuredClone(v);
    const meta = next.metadata ?? emptyMeta();
    meta.deletionTimestamp = nowRfc3339();
    (next as { status?: { phase: string; conditions: unknown[] } }).status = { phase: "Terminating", conditions: [] };
    v = await store.write("update", info, next, cur);
  }
  void purgeNamespace(store, name).catch((err: unknown) => store.log.error({ err, namespace: name }, "namespace purge failed"));
  return v;
}

/** Deletes everything in a terminating namespace, then the namespace. */
export async function purgeNamespace(store: GenericStore, name: string): Promise<void> {
  for (const info of KINDS) {
    if (!info.namespaced) continue;
    for (;;) {
      const page = await store.page(info, { namespace: name, limit: 500 });
      for (const v of page.items) {
        const m = v.metadata ?? emptyMeta();
        await store.remove(info, { value: v, revision: Number(m.resourceVersion) }).catch((err: unknown) => {
          if (!(err instanceof ApiError)) throw err;
        });
      }
      if (!page.next) break;
    }
  }
  const nsInfo = store.resolve("namespaces");
  const cur = await store.read(nsInfo, "", name).catch(() => undefined);
  if (cur) await store.remove(nsInfo, cur).catch((err: unknown) => store.log.warn({ err }, "namespace removal failed"));
  store.log.info({ namespace: name }, "namespace purged");
}
