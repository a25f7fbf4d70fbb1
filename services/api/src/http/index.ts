// The Kubernetes-shaped HTTP gateway over ApiHandlers (see README.md).
export { createGateway, verbOf } from "./gateway.js";
export type { Gateway, GatewayOptions, ListenOptions } from "./gateway.js";
export { ensureServingCert } from "./tls.js";
export type { ServingCert } from "./tls.js";
export { parseRoute, subresourcesOf } from "./routes.js";
export type { Route, ResourceRoute } from "./routes.js";
export { apiResourceList, apiGroupList, apiVersions, versionInfo } from "./discovery.js";
