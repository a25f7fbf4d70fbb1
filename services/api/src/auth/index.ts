// Authentication and authorization: who asks (tokens, client certificates),
// as whom (impersonation), and whether they may (the authorizer chain).
export { Authenticator, UNAUTHENTICATED_ADMIN, bearerToken, userOfCertificate } from "./authenticate.js";
export type { AuthenticatorOptions } from "./authenticate.js";
export { ALLOW_ALL, AuthorizerChain, authorizeOrThrow, forbiddenError } from "./authorize.js";
export { httpVerb, methodAttributes, nonResourceAttributes, resourceAttributes } from "./attributes.js";
export { guardedHandlers } from "./guarded-handlers.js";
export { impersonate } from "./impersonation.js";
export { LEGACY_ADMIN, StaticTokens, csvFields, legacyAdmin, parseTokenFile } from "./static-tokens.js";
export type { TokenAuthenticator } from "./static-tokens.js";
export { ANONYMOUS, AUTHENTICATED, MASTERS } from "./types.js";
export type { Attributes, Authorizer, Decision, UserInfo } from "./types.js";
