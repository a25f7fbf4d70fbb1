// Joined nodes' NATS users. Whoever started nats-server owns its user list
// (`choreo up`, the test harness: the config file it rewrites and reloads);
// the api, which hands a joined node its credentials, asks that owner over
// the bus: a request on NATS_USERS_SUBJECT naming the node, answered with the
// node agent's user and password (its permissions are the node's,
// nats-users.ts identityNatsPermissions). Only the api's and the
// administrator's NATS users may publish there (every other user's
// permissions name what it may publish, and this is not among them).
//
//   api (exchange) ──request {node}──► NATS_USERS_SUBJECT ──► owner: addUser(natsUserName("node-<node>"), node permissions)
//        ◄── {user, password} ──────────────────────────────────┘   (nats.conf rewritten, SIGHUP, reloaded)
import type { NatsConnection } from "@nats-io/transport-node";
import { identityNatsPermissions, natsUserName, nodeIdentity, readCredentials, type NatsPermissions } from "../secrets/index.js";

/** Where the api asks for a joined node's NATS user. */
export const NATS_USERS_SUBJECT = "choreo.nats.users.add";

/** A node name as Kubernetes takes it (DNS-1123 subdomain). */
const NODE_NAME = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$/;

/** What the owner of nats-server's users can do: add one (returns its credentials file), as NatsHandle.addUser. */
export interface NatsUserOwner {
  addUser(name: string, permissions: NatsPermissions): Promise<string>;
}

/** The request and the answer on NATS_USERS_SUBJECT. */
export interface NatsUserRequest {
  node: string;
}
export type NatsUserReply = { user: string; password: string } | { error: string };

/** Answers NATS_USERS_SUBJECT until `signal` aborts: each request adds (or finds) the node's user. */
export function serveNatsUsers(nc: NatsConnection, owner: NatsUserOwner, signal: AbortSignal): void {
  const sub = nc.subscribe(NATS_USERS_SUBJECT, {
    callback: (err, msg) => {
      if (err) return;
      void (async (): Promise<NatsUserReply> => {
        try {
          const req = JSON.parse(new TextDecoder().decode(msg.data)) as Partial<NatsUserRequest>;
          const node = typeof req.node === "string" ? req.node : "";
          if (node.length > 253 || !NODE_NAME.test(node)) return { error: `bad node name ${JSON.stringify(node)}` };
          const file = await owner.addUser(natsUserName(`node-${node}`), identityNatsPermissions(nodeIdentity(node)));
          return readCredentials(file);
        } catch (e) {
          return { error: (e as Error).message };
        }
      })().then((reply) => msg.respond(new TextEncoder().encode(JSON.stringify(reply))));
    },
  });
  if (signal.aborted) sub.unsubscribe();
  else signal.addEventListener("abort", () => sub.unsubscribe(), { once: true });
}

/** Asks the owner for `node`'s NATS user (the api's side); throws when nobody answers or the owner refuses. */
export async function requestNatsUser(nc: NatsConnection, node: string, timeoutMs = 10_000): Promise<{ user: string; password: string }> {
  const msg = await nc.request(NATS_USERS_SUBJECT, new TextEncoder().encode(JSON.stringify({ node } satisfies NatsUserRequest)), { timeout: timeoutMs });
  const reply = JSON.parse(new TextDecoder().decode(msg.data)) as NatsUserReply;
  if ("error" in reply) throw new Error(reply.error);
  return reply;
}
