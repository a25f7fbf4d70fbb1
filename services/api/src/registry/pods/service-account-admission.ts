// ServiceAccount admission of pods on create, as Kubernetes'
// plugin/pkg/admission/serviceaccount: the pod runs as a ServiceAccount
// that exists (`default` unless named), and — unless automounting is off
// on the pod, or (the pod silent) on the account — every container and
// init container mounts the projected `kube-api-access-xxxxx` volume (a
// bound token, the cluster CA, the namespace) read-only at
// /var/run/secrets/kubernetes.io/serviceaccount.
import { setTimeout as sleep } from "node:timers/promises";
import { forbidden, isNotFound, unwrap } from "@choreo/kit";
import { generateName } from "@choreo/kit/apimachinery";
import { Volume, VolumeMount, type Pod, type ServiceAccount } from "@choreo/kit/gen/choreo/core/v1/core";
import type { ApiHandlers } from "../../handlers/api-handlers.js";
import type { Strategy } from "../generic/strategy.js";

export const DEFAULT_SERVICE_ACCOUNT = "default";
/** Where the token, ca.crt and namespace appear in a container. */
export const SERVICE_ACCOUNT_MOUNT_PATH = "/var/run/secrets/kubernetes.io/serviceaccount";
/** The prefix of the injected volume's name. */
export const API_ACCESS_VOLUME_PREFIX = "kube-api-access-";
/** The ConfigMap every namespace has with the CA that signed the api's serving certificate. */
export const ROOT_CA_CONFIGMAP = "kube-root-ca.crt";
/** Kubernetes' lifetime of the injected token: an hour and 7 s (the 7 s tell it apart from other tokens). */
export const INJECTED_TOKEN_SECONDS = 3607;

/** How the admission finds ServiceAccounts; the `default` account is asked a few times, as the controller may not have made it yet. */
export interface ServiceAccountLookup {
  get: Pick<ApiHandlers, "get">["get"];
  /**
   * Attempts and pause for the `default` account: 40, 100-200 ms (4-8 s; Kubernetes waits 10 such, but its
   * ServiceAccount controller runs in kube-controller-manager, here in the replication actor, a process that may start later).
   */
  defaultAttempts?: number;
  retryMs?: number;
}

async function findServiceAccount(l: ServiceAccountLookup, namespace: string, name: string): Promise<ServiceAccount | undefined> {
  const attempts = name === DEFAULT_SERVICE_ACCOUNT ? (l.defaultAttempts ?? 40) : 1;
  for (let i = 0; i < attempts; i++) {
    if (i > 0) await sleep((l.retryMs ?? 100) + Math.floor(Math.random() * (l.retryMs ?? 100)));
    try {
      return unwrap(await l.get({ resource: "serviceaccounts", namespace, name })) as ServiceAccount;
    } catch (err) {
      if (!isNotFound(err)) throw err;
    }
  }
  return undefined;
}

/** The projected volume Kubernetes injects (token, kube-root-ca.crt's ca.crt, the namespace; mode 0644). */
export function apiAccessVolume(name: string): Volume {
  return Volume.fromPartial({
    name,
    projected: {
      defaultMode: 0o644,
      sources: [
        { serviceAccountToken: { audience: "", expirationSeconds: INJECTED_TOKEN_SECONDS, path: "token" } },
        { configMap: { name: ROOT_CA_CONFIGMAP, items: [{ key: "ca.crt", path: "ca.crt" }] } },
        { downwardApi: { items: [{ path: "namespace", fieldRef: { apiVersion: "v1", fieldPath: "metadata.namespace" } }] } },
      ],
    },
  });
}

/**
 * Admits a new pod: defaults spec.serviceAccountName (from the deprecated
 * serviceAccount, else `default`) and mirrors it into serviceAccount;
 * 403 when the account does not exist; mounts the API access volume where
 * automounting is on. Mirror pods (static pods' copies) are left alone.
 */
export async function admitServiceAccount(lookup: ServiceAccountLookup, pod: Pod, newName: (prefix: string) => string = generateName): Promise<void> {
  const spec = pod.spec;
  const meta = pod.metadata;
  if (!spec || !meta) return;
  if (meta.annotations["kubernetes.io/config.mirror"] !== undefined) return;
  spec.serviceAccountName ||= spec.serviceAccount || DEFAULT_SERVICE_ACCOUNT;
  spec.serviceAccount = spec.serviceAccountName;
  const sa = await findServiceAccount(lookup, meta.namespace, spec.serviceAccountName);
  if (!sa) {
    const name = meta.name || meta.generateName;
    throw forbidden(
      `pods "${name}" is forbidden: error looking up service account ${meta.namespace}/${spec.serviceAccountName}: serviceaccount "${spec.serviceAccountName}" not found`,
    );
  }
  const automount = spec.automountServiceAccountToken ?? sa.automountServiceAccountToken ?? true;
  if (!automount) return;
  const existing = spec.volumes.find((v) => v.name.startsWith(API_ACCESS_VOLUME_PREFIX));
  const volumeName = existing?.name ?? newName(API_ACCESS_VOLUME_PREFIX);
  let needed = false;
  for (const c of [...spec.initContainers, ...spec.containers]) {
    if (c.volumeMounts.some((m) => m.mountPath === SERVICE_ACCOUNT_MOUNT_PATH)) continue;
    c.volumeMounts.push(VolumeMount.fromPartial({ name: volumeName, readOnly: true, mountPath: SERVICE_ACCOUNT_MOUNT_PATH }));
    needed = true;
  }
  if (needed && !existing) spec.volumes.push(apiAccessVolume(volumeName));
}

/** The pod strategy with ServiceAccount admission after its own defaults, on create (the registry's `serviceAccountAdmission` option). */
export function withServiceAccountAdmission(s: Strategy<Pod>, lookup: Omit<ServiceAccountLookup, "get"> = {}): Strategy<Pod> {
  return {
    ...s,
    async prepareCreate(pod, store) {
      await s.prepareCreate?.(pod, store);
      if (store) await admitServiceAccount({ ...lookup, get: (req) => store.get(req) }, pod);
    },
  };
}
