import { isNotFound } from "@choreo/kit";
import type { ApiClient } from "@choreo/kit/client";
import type { Lookup, SourceData } from "./resolve.js";

const te = new TextEncoder();
const td = new TextDecoder();

/**
 * The ConfigMaps and Secrets of one namespace read through the api (a
 * Secret's data comes back in plaintext; its bus events carry it sealed, so
 * it is always fetched). Each object is read once per lookup: one pod's
 * resolution sees one version of it. With `token`, projected
 * serviceAccountToken sources get the pod's token (PodTokens.token).
 */
export function apiLookup(client: ApiClient, namespace: string, token?: Lookup["serviceAccountToken"]): Lookup {
  const seen = new Map<string, Promise<SourceData | undefined>>();
  const once = (key: string, read: () => Promise<SourceData | undefined>): Promise<SourceData | undefined> => {
    let p = seen.get(key);
    if (!p) seen.set(key, (p = read()));
    return p;
  };
  const get = async (resource: string, name: string) => {
    try {
      return await client.get(resource, namespace, name);
    } catch (err) {
      if (isNotFound(err)) return undefined;
      throw err;
    }
  };
  return {
    ...(token ? { serviceAccountToken: token } : {}),
    configMap: (name) =>
      once(`cm/${name}`, async () => {
        const o = await get("configmaps", name);
        if (o?.kind?.$case !== "configMap") return undefined;
        const cm = o.kind.value;
        const strings = new Map(Object.entries(cm.data));
        const files = new Map<string, Uint8Array>([...[...strings].map(([k, v]): [string, Uint8Array] => [k, te.encode(v)]), ...Object.entries(cm.binaryData)]);
        return { strings, files };
      }),
    secret: (name) =>
      once(`secret/${name}`, async () => {
        const o = await get("secrets", name);
        if (o?.kind?.$case !== "secret") return undefined;
        const files = new Map(Object.entries(o.kind.value.data));
        const strings = new Map([...files].map(([k, v]) => [k, td.decode(v)]));
        return { strings, files };
      }),
  };
}
