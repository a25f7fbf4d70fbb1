// ServiceAccount (core/v1): Kubernetes' ValidateServiceAccount is its
// metadata alone (a DNS subdomain name); secrets, imagePullSecrets and
// automountServiceAccountToken are stored as given.
import type { ServiceAccount } from "@choreo/kit/gen/choreo/core/v1/core";
import type { Strategy } from "../generic/strategy.js";

/** ServiceAccount: an identity for pods, system:serviceaccount:<namespace>:<name>. */
export const serviceAccountStrategy: Strategy<ServiceAccount> = {
  validate: () => [],
};
