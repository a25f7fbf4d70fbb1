// The registry: the api's verbs over the object storage, one folder per kind
// (strategy, subresources), the shared verbs in generic/.
import type { Logger } from "@choreo/kit/log";
import type { ObjectStorage } from "../storage/object-storage.js";
import { certificateSigningRequestStrategy } from "./certificatesigningrequests/strategy.js";
import { configMapStrategy } from "./configmaps/strategy.js";
import { cronJobStrategy } from "./cronjobs/strategy.js";
import { endpointsStrategy } from "./endpoints/strategy.js";
import { eventStrategy } from "./events/strategy.js";
import { GenericStore } from "./generic/store.js";
import { horizontalPodAutoscalerStrategy } from "./horizontalpodautoscalers/strategy.js";
import type { Strategies, Strategy } from "./generic/strategy.js";
import { leaseStrategy } from "./leases/strategy.js";
import { namespaceStrategy } from "./namespaces/strategy.js";
import { PodCidrAllocator } from "./nodes/pod-cidr.js";
import { nodeStrategy } from "./nodes/strategy.js";
import { podDisruptionBudgetStrategy } from "./poddisruptionbudgets/strategy.js";
import { podStrategy } from "./pods/strategy.js";
import { withServiceAccountAdmission } from "./pods/service-account-admission.js";
import { DEFAULT_POD_SECURITY, withPodSecurity, type PodSecurityConfig } from "./pods/pod-security/index.js";
import { clusterRoleBindingStrategy, clusterRoleStrategy, roleBindingStrategy, roleStrategy } from "./rbac/strategy.js";
import { withEscalationChecks, type EscalationGuard } from "./rbac/escalation-admission.js";
import { withNodeRestriction } from "../auth/node/node-restriction.js";
import { serviceAccountStrategy } from "./serviceaccounts/strategy.js";
import type { SecretSealer } from "./secrets/seal.js";
import { secretStrategy, sealedSecretStrategy } from "./secrets/strategy.js";
import { Registry } from "./registry.js";
import { ClusterIpAllocator } from "./services/cluster-ip.js";
import { NodePortAllocator } from "./services/node-port.js";
import { serviceStrategy } from "./services/strategy.js";
import { deploymentStrategy } from "./workloads/deployment.js";
import { replicaSetStrategy } from "./workloads/replicaset.js";
import { daemonSetStrategy, jobStrategy, replicationControllerStrategy } from "./workloads/strategy.js";

export { Registry } from "./registry.js";
export type { WatchSource } from "./generic/watch.js";
export { bootstrap } from "./bootstrap.js";
export { ClusterIpAllocator } from "./services/cluster-ip.js";
export { NodePortAllocator, NODE_PORT_RANGE } from "./services/node-port.js";
export { PodCidrAllocator } from "./nodes/pod-cidr.js";
export { MAX_OBJECT_BYTES } from "./generic/store.js";
export { SYSTEM_NAMESPACES } from "./namespaces/purge.js";
export { SecretSealer } from "./secrets/seal.js";
export { ensureEncryptionKeys, parseEncryptionKeys, type EncryptionKey } from "./secrets/keys.js";

/**
 * A registry with every kind's strategy over `store` (RedisStore in the api,
 * MemoryStore in tests). With `encryption`, Secrets are sealed at rest.
 */
export function createRegistry(opts: {
  store: ObjectStorage;
  serviceCidr: string;
  /** Node IPAM: every node's spec.podCIDR is a block of this range (default 10.244.0.0/16) … */
  clusterCidr?: string;
  /** … of this prefix length (default 24). */
  nodeCidrMaskSize?: number;
  log: Logger;
  encryption?: SecretSealer;
  /** Pod Security Admission's defaults and exemptions (default: baseline everywhere but kube-system). */
  podSecurity?: PodSecurityConfig;
  /**
   * ServiceAccount admission of new pods (pods/service-account-admission.ts):
   * the account must exist, the API access volume is mounted. Off by default
   * (tests over a bare registry have no accounts).
   */
  serviceAccountAdmission?: boolean;
  /** RBAC's escalation check, filled in by the api once its authorizer exists (rbac/escalation-admission.ts). */
  escalation?: EscalationGuard;
}): Registry {
  const strategies: Strategies = {
    pod: (opts.serviceAccountAdmission ? withServiceAccountAdmission(podStrategy) : podStrategy) as Strategy,
    service: serviceStrategy(new ClusterIpAllocator(opts.store, opts.serviceCidr), new NodePortAllocator(opts.store)) as Strategy,
    endpoints: endpointsStrategy as Strategy,
    replicationController: replicationControllerStrategy as Strategy,
    daemonSet: daemonSetStrategy as Strategy,
    job: jobStrategy as Strategy,
    cronJob: cronJobStrategy as Strategy,
    replicaSet: replicaSetStrategy as Strategy,
    deployment: deploymentStrategy as Strategy,
    namespace: namespaceStrategy as Strategy,
    node: nodeStrategy(new PodCidrAllocator(opts.store, opts.clusterCidr ?? "10.244.0.0/16", opts.nodeCidrMaskSize ?? 24)) as Strategy,
    lease: leaseStrategy as Strategy,
    event: eventStrategy as Strategy,
    configMap: configMapStrategy as Strategy,
    podDisruptionBudget: podDisruptionBudgetStrategy as Strategy,
    horizontalPodAutoscaler: horizontalPodAutoscalerStrategy as Strategy,
    certificateSigningRequest: certificateSigningRequestStrategy as Strategy,
    role: roleStrategy as Strategy,
    clusterRole: clusterRoleStrategy as Strategy,
    roleBinding: roleBindingStrategy as Strategy,
    clusterRoleBinding: clusterRoleBindingStrategy as Strategy,
    serviceAccount: serviceAccountStrategy as Strategy,
    secret: (opts.encryption ? sealedSecretStrategy(opts.encryption) : secretStrategy) as Strategy,
  };
  // NodeRestriction (a node's user sets no node-restriction.kubernetes.io/ label, changes no taint of its Node): auth/node.
  const admitted = withNodeRestriction(withEscalationChecks(withPodSecurity(strategies, opts.podSecurity ?? DEFAULT_POD_SECURITY), opts.escalation ?? {}));
  return new Registry(new GenericStore(opts.store, admitted, opts.log));
}
