/**
 * Redis keys: the one catalogue. Only the Redis implementation of the
 * storage (redis-store.ts, scripts.ts, relay.ts) and the api replicas'
 * membership (kubernetes-service/membership.ts) use them. All share the
 * `{choreo}` hash tag so that one Lua script can touch them atomically, also
 * on a Redis Cluster.
 *
 *   {choreo}:rev                     the cluster-wide revision (INCR)
 *   {choreo}:changes                 stream of change records, id "<rev>-0"
 *   {choreo}:o:<resource>:<ns>/<name> hash { v: object bytes, r: revision }
 *   {choreo}:i:<resource>            zset of "<ns>/<name>" (lex order: paging, namespace ranges)
 *   {choreo}:i:<resource>:<index>:<value>  secondary index, e.g. pods:node:n1
 *   {choreo}:relay                   the relay lease (one publisher at a time)
 *   {choreo}:bind:<node>             the per-node bind lock (token, 5 s expiry)
 *   {choreo}:ip:<address>            a ClusterIP taken: its owner "<ns>/<name>"
 *   {choreo}:nodeport:<port>         a node port taken: its owner "<ns>/<name>"
 *   {choreo}:apiservers              hash "<address>:<port>" → expiry (ms): the live api replicas
 *   {choreo}:fence                   the log's last sequence while the store is repaired below it
 *   {choreo}:repair                  the repairing replica's lock (token, renewed while it works)
 *   {choreo}:rebuild                 a rebuild's wipe not finished: the next repair redoes it first
 */
import { member } from "./object-storage.js";
import type { Pool } from "./object-storage.js";

export { member };

export const REV_KEY = "{choreo}:rev";
export const CHANGES_KEY = "{choreo}:changes";
export const RELAY_LOCK_KEY = "{choreo}:relay";
export const API_MEMBERS_KEY = "{choreo}:apiservers";
/** The event log's last sequence a repair found above the revision: no write below it (see WRITE_SCRIPT). */
export const FENCE_KEY = "{choreo}:fence";
/** Held by the api replica repairing a lost tail (recovery.ts). */
export const REPAIR_LOCK_KEY = "{choreo}:repair";
/**
 * Set with the fence when a rebuild starts and removed once its wipe is done: a replica killed while wiping
 * leaves it, and the next repair wipes again before putting the log back (see recovery.ts).
 */
export const REBUILD_KEY = "{choreo}:rebuild";

export function objectKey(resource: string, namespace: string, name: string): string {
  return `{choreo}:o:${resource}:${member(namespace, name)}`;
}

/** The prefix of a resource's object keys (the list script appends the member). */
export function objectKeyPrefix(resource: string): string {
  return `{choreo}:o:${resource}:`;
}

export function indexKey(resource: string): string {
  return `{choreo}:i:${resource}`;
}

export function secondaryIndexKey(resource: string, index: string, value: string): string {
  return `{choreo}:i:${resource}:${index}:${value}`;
}

export function nodeLockKey(node: string): string {
  return `{choreo}:bind:${node}`;
}

const POOL_PREFIX: Record<Pool, string> = { "cluster-ip": "{choreo}:ip:", "node-port": "{choreo}:nodeport:", "pod-cidr": "{choreo}:podcidr:" };

export function allocationKey(pool: Pool, item: string): string {
  return `${POOL_PREFIX[pool]}${item}`;
}
