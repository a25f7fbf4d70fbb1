// What the client's tests, examples' tests and the benchmark share: pod
// events published the way the api's relay does (sequence == revision).
import { jetstream } from "@nats-io/jetstream";
import type { NatsConnection } from "@nats-io/transport-node";
import { emptyMeta, wrap } from "@choreo/kit";
import { encodeEvent, eventSubject } from "@choreo/kit/bus";
import { Pod } from "@choreo/kit/gen/choreo/core/v1/core";

/** One pod change as stored in the log. */
export interface PodChange {
  type: "ADDED" | "MODIFIED" | "DELETED";
  namespace: string;
  name: string;
  node?: string;
  labels?: Record<string, string>;
}

/** The WatchEvent bytes of a pod change at `revision`. */
export function podEventBytes(c: PodChange, revision: number): Uint8Array {
  const pod = Pod.fromPartial({
    apiVersion: "v1",
    kind: "Pod",
    metadata: emptyMeta({ name: c.name, namespace: c.namespace, labels: c.labels ?? {}, resourceVersion: String(revision) }),
    spec: { nodeName: c.node ?? "" },
  });
  return encodeEvent({ type: c.type, object: wrap("pod", pod), status: undefined, revision, prevLabels: {}, prevFields: {}, hasPrev: false });
}

/**
 * Publishes changes after the stream's last sequence, each expecting the one
 * before (the relay's `Nats-Expected-Last-Sequence`): sequence == revision.
 * Acks are awaited in windows of `window`. Returns the last revision.
 */
export async function publishPodChanges(nc: NatsConnection, first: number, changes: PodChange[], window = 512): Promise<number> {
  const js = jetstream(nc);
  let rev = first - 1;
  for (let i = 0; i < changes.length; i += window) {
    const acks: Promise<unknown>[] = [];
    for (const c of changes.slice(i, i + window)) {
      rev++;
      acks.push(js.publish(eventSubject("pods", c.namespace, c.name, c.node ?? ""), podEventBytes(c, rev), { expect: { lastSequence: rev - 1 } }));
    }
    await Promise.all(acks);
  }
  return rev;
}
