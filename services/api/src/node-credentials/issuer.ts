// The exchange of a bootstrap token for a node credential (`choreo join`),
// choreo's smaller stand-in for Kubernetes' kubelet TLS bootstrap (a
// certificates.k8s.io CSR auto-approved by the csrapprover): node agents
// speak to the api over NATS with a bearer token, which a client certificate
// cannot be, so the credential is what `choreo up` provisions for its own
// agents:
//
//   POST /choreo/v1/nodecredential {"nodeName": N}   as system:bootstrap:<id> (RBAC: system:node-bootstrapper)
//     ├─► a fresh token, its line `token,system:node:N,…,"system:nodes"` in the api's token file
//     │     (any earlier line of system:node:N replaced: a re-join revokes the last credential)
//     ├─► N's NATS user, asked of whoever owns nats-server's users (kit/bus serveNatsUsers)
//     └─► answered once, over the TLS the joiner checked against --ca-hash:
//           { token, nats: {url, user, password}, eventVerifyKey, natsCa? }
//
// The node authorizer applies to the token's user from its first request:
// it may write only Node N, its Lease and its pods' status.
import { randomBytes } from "node:crypto";
import { existsSync, readFileSync } from "node:fs";
import { badRequest, forbidden, unavailable } from "@choreo/kit";
import type { Logger } from "@choreo/kit/log";
import { csvFields } from "../auth/static-tokens.js";
import { BOOTSTRAPPERS_GROUP } from "../auth/bootstrap-tokens.js";
import type { UserInfo } from "../auth/types.js";
import { nodeIdentity, tokenLine, writeSecretFile } from "@choreo/kit/secrets";

export const NODE_CREDENTIAL_PATH = "/choreo/v1/nodecredential";

/** A node name as Kubernetes takes it (DNS-1123 subdomain). */
const NODE_NAME = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$/;

/** What a joining node receives. */
export interface NodeCredential {
  apiVersion: "choreo.dev/v1";
  kind: "NodeCredential";
  nodeName: string;
  /** `system:node:<nodeName>` */
  user: string;
  /** Its bearer token (the api's NATS door and https). */
  token: string;
  /** Its NATS user on the cluster's bus (the url as the api reaches it, without credentials). */
  nats: { url: string; user: string; password: string; caPem?: string };
  /** The api's event-signing public key (PEM): pod events without its signature run nothing. */
  eventVerifyKey: string;
}

export interface NodeCredentialIssuerOptions {
  /** The api's token file (re-read by the api when it changes). */
  tokenFile: string;
  /** The node's NATS user, from the owner of nats-server's users (kit/bus requestNatsUser); throws when there is none. */
  natsUser: (node: string) => Promise<{ user: string; password: string }>;
  /** The bus url given to joined nodes (no userinfo). */
  natsUrl: string;
  /** The PEM file of the bus' CA, when the bus has TLS. */
  natsCaFile?: string;
  /** The PEM file of the event-signing public key. */
  eventVerifyKeyFile: string;
  log: Logger;
}

/** Issues node credentials to bootstrappers. */
export class NodeCredentialIssuer {
  /** One exchange at a time: the token file is read, changed and written whole. */
  private queue: Promise<unknown> = Promise.resolve();

  constructor(private readonly opts: NodeCredentialIssuerOptions) {}

  /** The credential of node `nodeName` for `user` (a bootstrapper); 400 for a bad name, 403 for anyone else, 503 without a NATS user owner. */
  issue(user: UserInfo, nodeName: unknown): Promise<NodeCredential> {
    const run = this.queue.then(() => this.issueNow(user, nodeName));
    this.queue = run.catch(() => undefined);
    return run;
  }

  private async issueNow(user: UserInfo, nodeName: unknown): Promise<NodeCredential> {
    // RBAC let the request in; this is the approver's own check (only bootstrappers exchange, as the csrapprover).
    if (!user.groups.includes(BOOTSTRAPPERS_GROUP))
      throw forbidden(`user "${user.name}" is not a bootstrapper: only a bootstrap token is exchanged for a node credential`);
    if (typeof nodeName !== "string" || nodeName.length > 253 || !NODE_NAME.test(nodeName))
      throw badRequest(`nodeName must be a lower-case DNS subdomain (a-z, 0-9, '-', '.'), got ${JSON.stringify(nodeName)}`);
    let nats: { user: string; password: string };
    try {
      nats = await this.opts.natsUser(nodeName);
    } catch (err) {
      this.opts.log.warn({ err, node: nodeName }, "no NATS user for a joining node");
      throw unavailable(`the cluster's NATS users cannot be extended (${(err as Error).message}): join needs a cluster started by choreo up`);
    }
    const id = nodeIdentity(nodeName);
    const token = randomBytes(24).toString("base64url");
    this.replaceTokenLine(id.user, tokenLine(token, id));
    this.opts.log.info({ node: nodeName, by: user.name }, "node credential issued");
    return {
      apiVersion: "choreo.dev/v1",
      kind: "NodeCredential",
      nodeName,
      user: id.user,
      token,
      nats: {
        url: this.opts.natsUrl,
        ...nats,
        ...(this.opts.natsCaFile && existsSync(this.opts.natsCaFile) ? { caPem: readFileSync(this.opts.natsCaFile, "utf8") } : {}),
      },
      eventVerifyKey: readFileSync(this.opts.eventVerifyKeyFile, "utf8"),
    };
  }

  /** The token file with every line of `userName` replaced by `line` (0600, written whole). */
  private replaceTokenLine(userName: string, line: string): void {
    const lines = existsSync(this.opts.tokenFile) ? readFileSync(this.opts.tokenFile, "utf8").split("\n") : [];
    const kept = lines.filter((l) => l.trim() !== "" && (l.trim().startsWith("#") || csvFields(l.trim())[1] !== userName));
    writeSecretFile(this.opts.tokenFile, `${[...kept, line].join("\n")}\n`);
  }
}
