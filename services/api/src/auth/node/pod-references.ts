// What a pod uses from its namespace, as Kubernetes' podutil.VisitPodSecretNames
// and VisitPodConfigmapNames (every container kind) and the node
// authorizer's graph (pvc and serviceaccount edges): the objects its node
// may read because of it.
import type { Container, EphemeralContainer, Pod } from "@choreo/kit/gen/choreo/core/v1/core";

/** The kinds of object a node may read because a pod of it uses one. */
export type ReferenceKind = "secrets" | "configmaps" | "persistentvolumeclaims" | "serviceaccounts";

/** The names (in the pod's namespace) a pod uses, per kind; each set without empty names. */
export type PodReferences = Record<ReferenceKind, Set<string>>;

/** The ServiceAccount a pod runs as: `serviceAccountName`, the deprecated `serviceAccount`, else `default` (what admission fills in). */
export function serviceAccountOf(pod: Pick<Pod, "spec">): string {
  return pod.spec?.serviceAccountName || pod.spec?.serviceAccount || "default";
}

/**
 * The Secrets, ConfigMaps, PersistentVolumeClaims and ServiceAccount `pod`
 * uses: volumes (secret, configMap, persistentVolumeClaim, projected
 * secret/configMap sources), each container's (init, app, ephemeral)
 * `env[].valueFrom` key refs and `envFrom`, `imagePullSecrets`, and its
 * ServiceAccount. Optional references count: the node reads them to learn
 * they are missing.
 */
export function podReferences(pod: Pick<Pod, "spec">): PodReferences {
  const refs: PodReferences = { secrets: new Set(), configmaps: new Set(), persistentvolumeclaims: new Set(), serviceaccounts: new Set() };
  const add = (kind: ReferenceKind, name: string | undefined): void => {
    if (name) refs[kind].add(name);
  };
  const spec = pod.spec;
  add("serviceaccounts", serviceAccountOf(pod));
  if (!spec) return refs;
  for (const s of spec.imagePullSecrets) add("secrets", s.name);
  for (const v of spec.volumes) {
    add("secrets", v.secret?.secretName);
    add("configmaps", v.configMap?.name);
    add("persistentvolumeclaims", v.persistentVolumeClaim?.claimName);
    for (const s of v.projected?.sources ?? []) {
      add("secrets", s.secret?.name);
      add("configmaps", s.configMap?.name);
    }
  }
  const containers: (Container | EphemeralContainer)[] = [...spec.initContainers, ...spec.containers, ...spec.ephemeralContainers];
  for (const c of containers) {
    for (const e of c.envFrom) {
      add("secrets", e.secretRef?.name);
      add("configmaps", e.configMapRef?.name);
    }
    for (const e of c.env) {
      add("secrets", e.valueFrom?.secretKeyRef?.name);
      add("configmaps", e.valueFrom?.configMapKeyRef?.name);
    }
  }
  return refs;
}
