/**
 * Subjects of the event log. Every change is published on
 *   choreo.ev.<resource>.<namespace|_>.<name>
 * and pod changes carry the node they are bound to (invariant 5), so a node
 * agent subscribes to its own pods only:
 *   choreo.ev.pods.<node|_>.<namespace>.<name>
 * Names may contain dots, which NATS uses as token separators: they are
 * written as `~` (never valid in a Kubernetes name).
 */
export const EVENT_PREFIX = "choreo.ev";

/** The JetStream stream that holds the event log. */
export const EVENT_STREAM = "CHOREO_EVENTS";

/** The NATS request subject of an api method: `choreo.api.<method>`. */
export function apiSubject(method: string): string {
  return `choreo.api.${method}`;
}

/** Escapes a name for use as one subject token. */
export function token(s: string): string {
  return s === "" ? "_" : s.replaceAll(".", "~");
}

/** Reverses `token`. */
export function untoken(s: string): string {
  return s === "_" ? "" : s.replaceAll("~", ".");
}

/** The subject of a change to an object. `node` matters for pods only. */
export function eventSubject(resource: string, namespace: string, name: string, node = ""): string {
  if (resource === "pods") return `${EVENT_PREFIX}.pods.${token(node)}.${token(namespace)}.${token(name)}`;
  return `${EVENT_PREFIX}.${resource}.${token(namespace)}.${token(name)}`;
}

/**
 * Live pod events: the event stream republishes every stored pod change
 * (JetStream RePublish, done by nats-server after the store) from
 *   choreo.ev.pods.<node|_>.<namespace>.<name>
 * to the core-NATS subject
 *   choreo.live.pods.<node|_>.<namespace>.<name>
 * with its headers (the api's signature) and `Nats-Sequence` (the revision).
 * Core subscriptions are routed through the server's subject tree, so a pod
 * event costs the same at 100 or 5,000 node agents; a filtered JetStream
 * consumer per node was tested against every event (nats-server 2.9).
 * `followEvents` reads these, and the log itself only to catch up.
 */
export const LIVE_PREFIX = "choreo.live";

/** The stream's RePublish: pod changes to their live subjects. */
export const POD_REPUBLISH = { src: `${EVENT_PREFIX}.pods.>`, dest: `${LIVE_PREFIX}.pods.>` } as const;

/** The live subject (or filter) of a pod event-log subject (or filter); undefined outside the republished pods. */
export function liveSubjectOf(subject: string): string | undefined {
  const prefix = `${EVENT_PREFIX}.pods.`;
  return subject.startsWith(prefix) ? `${LIVE_PREFIX}.pods.${subject.slice(prefix.length)}` : undefined;
}

/** The filter for every change of a resource, optionally in one namespace. */
export function resourceFilter(resource: string, namespace = ""): string {
  if (resource === "pods") return namespace ? `${EVENT_PREFIX}.pods.*.${token(namespace)}.*` : `${EVENT_PREFIX}.pods.>`;
  return namespace ? `${EVENT_PREFIX}.${resource}.${token(namespace)}.*` : `${EVENT_PREFIX}.${resource}.>`;
}

/** The filter for the pods bound to one node (or `""`: unbound pods). */
export function podsOnNodeFilter(node: string): string {
  return `${EVENT_PREFIX}.pods.${token(node)}.>`;
}

/**
 * The subject of a node agent's request-reply service:
 * `choreo.agent.<node>.<verb>` (the agent of a node subscribes to its own).
 */
export function agentSubject(node: string, verb: string): string {
  return `choreo.agent.${token(node)}.${verb}`;
}

/** Where the api asks a node's agent for a container log, streamed on a bus stream (see bus/bus-stream.ts). */
export function agentLogsSubject(node: string): string {
  return agentSubject(node, "logs");
}

/** The bus stream channel a container log's bytes travel on. */
export const LOG_CHANNEL = 1;

/** Where the api asks a node's agent for a stream into a container: exec and attach (see bus/bus-stream.ts). */
export function agentExecSubject(node: string): string {
  return agentSubject(node, "exec");
}

/** Where the api asks a node's agent for a connection to a port of a pod (pods/portforward; see bus/bus-stream.ts). */
export function agentPortForwardSubject(node: string): string {
  return agentSubject(node, "portforward");
}

/**
 * Change notices: a core-NATS message on `choreo.notice.<resource>.<namespace>.<name>`
 * with no body, which the api publishes after each ConfigMap and Secret event
 * is stored. A node agent follows these (not the events, which carry the
 * objects) and GETs what its pods use through the api.
 */
export const NOTICE_PREFIX = "choreo.notice";

/** The resources with change notices. */
export const NOTICE_RESOURCES = ["configmaps", "secrets"] as const;

/** The notice subject of an event-log subject, or undefined when its resource has none. */
export function noticeSubjectOf(eventSubject: string): string | undefined {
  const resource = eventSubject.split(".")[2];
  if (!eventSubject.startsWith(`${EVENT_PREFIX}.`) || !NOTICE_RESOURCES.some((r) => r === resource)) return undefined;
  return NOTICE_PREFIX + eventSubject.slice(EVENT_PREFIX.length);
}

/** The filter for every notice of a resource. */
export function noticeFilter(resource: (typeof NOTICE_RESOURCES)[number]): string {
  return `${NOTICE_PREFIX}.${resource}.>`;
}

/** The filter for everything. */
export const ALL_EVENTS = `${EVENT_PREFIX}.>`;
