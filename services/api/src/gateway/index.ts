// The Kubernetes-shaped HTTP gateway over ApiHandlers.
export { createGateway } from "./server.js";
export type { Gateway, GatewayOptions } from "./server.js";
export { ensureServingCert } from "./tls.js";
export type { ServingCert } from "./tls.js";
export { toTable } from "./tables.js";
