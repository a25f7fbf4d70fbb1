/**
 * Redis keys. All share the `{choreo}` hash tag so that one Lua script can
 * touch them atomically, also on a Redis Cluster.
 *
 *   {choreo}:rev                     the cluster-wide revision (INCR)
 *   {choreo}:changes                 stream of change records, id "<rev>-0"
 *   {choreo}:o:<resource>:<ns>/<name> hash { v: object bytes, r: revision }
 *   {choreo}:i:<resource>            zset of "<ns>/<name>" (lex order: paging, namespace ranges)
 *   {choreo}:i:<resource>:<index>:<value>  secondary index, e.g. pods:node:n1
 *   {choreo}:relay                   the relay lease (one publisher at a time)
 */
export const REV_KEY = "{choreo}:rev";
export const CHANGES_KEY = "{choreo}:changes";
export const RELAY_LOCK_KEY = "{choreo}:relay";

/** `<ns>/<name>`, `/<name>` for cluster-scoped objects. */
export function member(namespace: string, name: string): string {
  return `${namespace}/${name}`;
}

export function objectKey(resource: string, namespace: string, name: string): string {
  return `{choreo}:o:${resource}:${member(namespace, name)}`;
}

export function indexKey(resource: string): string {
  return `{choreo}:i:${resource}`;
}

export function secondaryIndexKey(resource: string, index: string, value: string): string {
  return `{choreo}:i:${resource}:${index}:${value}`;
}
