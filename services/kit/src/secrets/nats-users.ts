import { NODES_GROUP, type Identity } from "./identities.js";
import type { NatsPermissions } from "./secrets.js";

/**
 * Who may do what on the bus. The api's user may do everything (it serves
 * `choreo.api.>`, publishes the event log, asks node agents); everyone else
 * gets one of these:
 *
 * - an actor (scheduler, replication, endpoints): api requests, reading the
 *   event stream through JetStream's API (the subjects consumeEvents and
 *   jetstreamManager use, for the CHOREO_EVENTS stream only), replies;
 * - a node agent: api requests, consumers of the event log for its own pods
 *   and the kinds every node reads (not any filter), its own pods' live
 *   subjects (`choreo.live.pods.<node>.>`), plus its own node's request subjects
 *   (`choreo.agent.<node>.>`: logs, exec, portforward, stats) and the
 *   ConfigMap and Secret change notices its volumes follow;
 * - a hollow-nodes process: every node's subjects (its nodes are many);
 * - `events`: a read-only event-stream subscriber (no api requests).
 *
 * Nobody but the api may publish `choreo.ev.>` or write into the stream, and
 * nobody publishes `choreo.live.>` (nats-server republishes the stream there)
 * (`$JS.API.STREAM.*` other than INFO, `$JS.API.CONSUMER.*` of other streams).
 */

/** The event log's stream (kept here as a literal: secrets is below bus). */
const STREAM = "CHOREO_EVENTS";

/** The JetStream API subjects a reader of the event log publishes: account and stream info, its own ordered consumers, their pulls. */
export const EVENT_READER_JS_SUBJECTS = [
  "$JS.API.INFO",
  `$JS.API.STREAM.INFO.${STREAM}`,
  `$JS.API.CONSUMER.CREATE.${STREAM}`,
  `$JS.API.CONSUMER.CREATE.${STREAM}.>`,
  `$JS.API.CONSUMER.INFO.${STREAM}.*`,
  `$JS.API.CONSUMER.DELETE.${STREAM}.*`,
  `$JS.API.CONSUMER.MSG.NEXT.${STREAM}.*`,
  `$JS.ACK.${STREAM}.>`,
  `$JS.FC.${STREAM}.>`,
];

/**
 * The kinds every node agent reads in full from the event log: Services and
 * Endpoints (its service proxy and cluster DNS, as kube-proxy reads them),
 * and Nodes (its routes to the other nodes' pod CIDRs, as flannel reads them).
 * Its pods it reads by its node's filter; nothing else (ConfigMaps, Secrets,
 * other nodes' pods) through the log: it GETs those through the api, where
 * the node authorizer decides.
 */
export const NODE_SHARED_EVENT_FILTERS = ["choreo.ev.services.>", "choreo.ev.endpoints.>", "choreo.ev.nodes.>"];

/** The event-log filters the node agent of `node` may create consumers for: its own pods', and the shared kinds. */
export function nodeEventFilters(node: string): string[] {
  return [`choreo.ev.pods.${nodeToken(node)}.>`, ...NODE_SHARED_EVENT_FILTERS];
}

/**
 * The JetStream API subjects a node agent publishes: a reader's, but its
 * consumers only through the subject form that names their one filter
 * (`$JS.API.CONSUMER.CREATE.<stream>.<name>.<filter>`, nats.js's for an
 * ordered consumer with one filter; the server refuses a body whose
 * filter_subject differs from the subject's), for `nodeEventFilters` only.
 * No direct get or message get, no consumer listing. Residual: pulls, info
 * and deletion of a consumer by name (`.*`: names are whole tokens, no
 * prefix match) — another reader's consumer names are random (nuid) and
 * cannot be listed.
 */
export function nodeEventReaderJsSubjects(node: string): string[] {
  return [
    "$JS.API.INFO",
    `$JS.API.STREAM.INFO.${STREAM}`,
    ...nodeEventFilters(node).map((f) => `$JS.API.CONSUMER.CREATE.${STREAM}.*.${f}`),
    `$JS.API.CONSUMER.INFO.${STREAM}.*`,
    `$JS.API.CONSUMER.DELETE.${STREAM}.*`,
    `$JS.API.CONSUMER.MSG.NEXT.${STREAM}.*`,
    `$JS.ACK.${STREAM}.>`,
    `$JS.FC.${STREAM}.>`,
  ];
}

/** Where replies and bus streams arrive (nats.js inboxes). */
const INBOX = "_INBOX.>";

/** What no one but the api may publish, even where an allow would match. */
const NEVER = [
  "choreo.ev.>",
  "choreo.live.>",
  "choreo.notice.>",
  "$JS.API.STREAM.CREATE.>",
  "$JS.API.STREAM.UPDATE.>",
  "$JS.API.STREAM.DELETE.>",
  "$JS.API.STREAM.PURGE.>",
  "$JS.API.STREAM.MSG.>",
];

/** The live subjects the stream republishes a node's pod changes to (kit/bus `followEvents`). */
function nodeLivePods(node: string): string {
  return `choreo.live.pods.${nodeToken(node)}.>`;
}

/** A subject token as kit/bus writes a node's name (dots as `~`). */
function nodeToken(node: string): string {
  return node === "" ? "_" : node.replaceAll(".", "~");
}

/** The scheduler, replication and endpoints actors. */
export function actorNatsPermissions(): NatsPermissions {
  return {
    publish: { allow: ["choreo.api.>", ...EVENT_READER_JS_SUBJECTS, INBOX], deny: NEVER },
    subscribe: { allow: [INBOX] },
  };
}

/** The node agent of `node`: api requests, its own consumers of the event log (`nodeEventReaderJsSubjects`), its node's request subjects and the ConfigMap/Secret change notices. */
export function nodeNatsPermissions(node: string): NatsPermissions {
  return {
    publish: { allow: ["choreo.api.>", ...nodeEventReaderJsSubjects(node), INBOX], deny: NEVER },
    subscribe: { allow: [INBOX, `choreo.agent.${nodeToken(node)}.>`, nodeLivePods(node), "choreo.notice.configmaps.>", "choreo.notice.secrets.>"] },
    allowResponses: true,
  };
}

/** A hollow-nodes process: every node's request subjects (its nodes are many, in one connection). */
export function hollowNodesNatsPermissions(): NatsPermissions {
  const base = actorNatsPermissions();
  return { publish: base.publish, subscribe: { allow: [INBOX, "choreo.agent.>", "choreo.live.pods.>"] }, allowResponses: true };
}

/** A read-only event-stream subscriber: JetStream reads of the event log and replies; no api request, no publishing. */
export function eventsReaderNatsPermissions(): NatsPermissions {
  return { publish: { allow: [...EVENT_READER_JS_SUBJECTS, INBOX], deny: NEVER }, subscribe: { allow: [INBOX] } };
}

/**
 * An event-stream subscriber (`@choreo/client` subscribe(), `choreo events`):
 * the read-only set — consumers of the event log (durable ones too: their
 * create, info, delete, pulls and acks are `EVENT_READER_JS_SUBJECTS`), no
 * api request (`choreo.api.>`), no publishing of events or stream writes.
 */
export const subscriberNatsPermissions = eventsReaderNatsPermissions;

/** The NATS permissions of an actor's identity: a node agent's (`system:node:<node>`), a hollow-nodes process's (another `system:nodes` member), an actor's. */
export function identityNatsPermissions(id: Identity): NatsPermissions {
  if (id.user.startsWith("system:node:")) return nodeNatsPermissions(id.user.slice("system:node:".length));
  if (id.groups.includes(NODES_GROUP)) return hollowNodesNatsPermissions();
  return actorNatsPermissions();
}

/** A NATS user name for an actor known as `name` (letters, digits, `_ . -`, as nats.conf takes them). */
export function natsUserName(name: string): string {
  return `actor-${name.replace(/[^A-Za-z0-9_.-]/g, "-")}`;
}
