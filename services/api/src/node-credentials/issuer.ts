// The exchange of a bootstrap token for a node credential (`choreo join`),
// choreo's smaller stand-in for Kubernetes' kubelet TLS bootstrap (a
// certificates.k8s.io CSR auto-approved by the csrapprover): node agents
// speak to the api over NATS with a bearer token, which a client certificate
// cannot be, so the credential is what `choreo up` provisions for its own
// agents:
//
//   POST /choreo/v1/nodecredential {"nodeName": N}   as system:bootstrap:<id> (RBAC: system:node-bootstrapper)
//     ├─► N's NATS user, asked of whoever owns nats-server's users (kit/bus serveNatsUsers)
//     ├─► a fresh token `choreo-node.N.<secret>`, its SHA-256 in the Secret kube-system/node-credential-N
//     │     (type choreo.dev/node-credential, credential-secret.ts): created, or replaced — a re-join revokes
//     │     the last token on every replica; a line of N in this replica's token file (a node joined before
//     │     credentials were Secrets) is removed too
//     └─► answered once, over the TLS the joiner checked against --ca-hash:
//           { token, nats: {url, user, password}, eventVerifyKey, natsCa? }
//
// Every replica knows the token from the Secret (authenticator.ts). The node
// authorizer applies to the token's user from its first request: it may
// write only Node N, its Lease and its pods' status.
import { existsSync, readFileSync } from "node:fs";
import { badRequest, forbidden, isAlreadyExists, isConflict, isNotFound, unavailable, unwrap } from "@choreo/kit";
import type { Logger } from "@choreo/kit/log";
import type { Secret } from "@choreo/kit/gen/choreo/core/v1/core";
import { DeleteOptions } from "@choreo/kit/gen/choreo/meta/v1/meta";
import type { ApiHandlers } from "../handlers/api-handlers.js";
import { csvFields } from "../auth/static-tokens.js";
import { BOOTSTRAPPERS_GROUP } from "../auth/bootstrap-tokens.js";
import type { UserInfo } from "../auth/types.js";
import { nodeIdentity, writeSecretFile } from "@choreo/kit/secrets";
import {
  credentialSecret,
  credentialSecretName,
  isJoinableNodeName,
  MAX_JOIN_NODE_NAME,
  NODE_CREDENTIAL_NAMESPACE,
  NODE_CREDENTIAL_TYPE,
  newNodeToken,
} from "./credential-secret.js";

export const NODE_CREDENTIAL_PATH = "/choreo/v1/nodecredential";

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
  /** Where the credential Secrets are written: the api's own handlers. */
  secrets: Pick<ApiHandlers, "get" | "create" | "update" | "delete">;
  /** The Secret as written (this replica's cache takes it at once: a re-join's old token stops here without waiting for the watch). */
  onWritten?: (s: Secret) => void;
  /** The api's token file: a line of the joining node there (a node joined before credentials were Secrets) is removed. */
  tokenFile?: string;
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
  /** One exchange at a time (on this replica; across replicas the Secret's resourceVersion decides). */
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
    if (!isJoinableNodeName(nodeName))
      throw badRequest(
        `nodeName must be a lower-case DNS subdomain (a-z, 0-9, '-', '.') of at most ${MAX_JOIN_NODE_NAME} characters, got ${JSON.stringify(nodeName)}`,
      );
    let nats: { user: string; password: string };
    try {
      nats = await this.opts.natsUser(nodeName);
    } catch (err) {
      this.opts.log.warn({ err, node: nodeName }, "no NATS user for a joining node");
      throw unavailable(`the cluster's NATS users cannot be extended (${(err as Error).message}): join needs a cluster started by choreo up`);
    }
    const id = nodeIdentity(nodeName);
    const token = newNodeToken(nodeName);
    const written = await this.writeSecret(nodeName, token);
    this.opts.onWritten?.(written);
    const removedLines = this.removeTokenLines(id.user);
    this.opts.log.info(
      { node: nodeName, by: user.name, secret: written.metadata?.name, resourceVersion: written.metadata?.resourceVersion, removedLines },
      "node credential issued",
    );
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

  /** Creates node `node`'s credential Secret, or replaces the one there (a re-join); a conflicting write of another replica is retried. */
  private async writeSecret(node: string, token: string): Promise<Secret> {
    const name = credentialSecretName(node);
    for (let attempt = 0; ; attempt++) {
      try {
        return unwrap(await this.opts.secrets.create({ object: credentialSecret(node, token), dryRun: false })) as Secret;
      } catch (err) {
        if (!isAlreadyExists(err) || attempt >= 5) throw err;
      }
      try {
        const old = unwrap(await this.opts.secrets.get({ resource: "secrets", namespace: NODE_CREDENTIAL_NAMESPACE, name })) as Secret;
        if (old.type === NODE_CREDENTIAL_TYPE && !old.metadata?.deletionTimestamp)
          return unwrap(await this.opts.secrets.update({ object: credentialSecret(node, token, old.metadata?.resourceVersion), dryRun: false })) as Secret;
        // Another type (the type is immutable): this one replaces it.
        await this.opts.secrets.delete({
          resource: "secrets",
          namespace: NODE_CREDENTIAL_NAMESPACE,
          name,
          options: DeleteOptions.fromPartial({ preconditions: { uid: old.metadata?.uid ?? "", resourceVersion: old.metadata?.resourceVersion ?? "" } }),
        });
      } catch (err) {
        // Deleted or written by another replica meanwhile: again from the create.
        if (!isNotFound(err) && !isConflict(err)) throw err;
      }
    }
  }

  /** Removes every line of `userName` from the token file; how many. Nothing is written when there is none. */
  private removeTokenLines(userName: string): number {
    const file = this.opts.tokenFile;
    if (!file || !existsSync(file)) return 0;
    const lines = readFileSync(file, "utf8").split("\n");
    const kept = lines.filter((l) => l.trim() === "" || l.trim().startsWith("#") || csvFields(l.trim())[1] !== userName);
    if (kept.length === lines.length) return 0;
    writeSecretFile(file, kept.join("\n"));
    return lines.length - kept.length;
  }
}
