// A workload (Deployment or ReplicationController), describe-like: replicas
// desired / updated / ready / available and the rollout, selector, strategy,
// pod template, conditions, its pods (by its selector) and its events — live
// over watches of that object, its pods and its events.
import { collectionPath } from "./api.js";
import { Conditions, Details, pairs, PodsTable } from "./describe.js";
import { useCollection } from "./live.js";
import { Events } from "./pod.js";
import type { KEvent, Pod, Workload } from "./types.js";

const KINDS: Record<string, { kind: string; groupVersion: string }> = {
  deployments: { kind: "Deployment", groupVersion: "apps/v1" },
  replicationcontrollers: { kind: "ReplicationController", groupVersion: "v1" },
};

/** The workload's selector as matchLabels (a Deployment's LabelSelector, an RC's map). */
function matchLabels(w: Workload): Record<string, string> {
  const s = w.spec?.selector;
  if (!s) return {};
  if ("matchLabels" in s && typeof s.matchLabels === "object") return s.matchLabels;
  return s as Record<string, string>;
}

export function WorkloadDetail(p: { resource: string; namespace: string; name: string }) {
  const k = KINDS[p.resource];
  const enc = encodeURIComponent;
  const objs = useCollection<Workload>(k ? `${collectionPath(k.groupVersion, p.resource, p.namespace)}?fieldSelector=${enc(`metadata.name=${p.name}`)}` : null);
  const w = objs.items.get(`${p.namespace}/${p.name}`);
  const selector = w ? pairs(matchLabels(w)).replaceAll(", ", ",") : undefined;
  const pods = useCollection<Pod>(selector && selector !== "—" ? `/api/v1/namespaces/${enc(p.namespace)}/pods?labelSelector=${enc(selector)}` : null);
  const events = useCollection<KEvent>(
    k ? `/api/v1/namespaces/${enc(p.namespace)}/events?fieldSelector=${enc(`involvedObject.kind=${k.kind},involvedObject.name=${p.name}`)}` : null,
  );
  if (!k)
    return (
      <main>
        <h1>Not a workload</h1>
        <p role="alert" class="error">
          Unknown workload kind "{p.resource}": deployments or replicationcontrollers.
        </p>
      </main>
    );
  return (
    <main aria-labelledby="workload-title">
      <p>
        <a href="#/workloads">← Workloads</a>
      </p>
      <h1 id="workload-title">
        {k.kind} {p.namespace}/{p.name}
      </h1>
      {objs.error ? (
        <p role="alert" class="error">
          Could not load: {objs.error}
        </p>
      ) : null}
      {!objs.synced ? <p>Loading…</p> : !w ? <p role="status">This {k.kind} does not exist (any more).</p> : <Describe kind={k.kind} w={w} />}
      <section aria-labelledby="workload-pods-title">
        <h2 id="workload-pods-title">Pods</h2>
        {pods.error ? (
          <p role="alert" class="error">
            Could not load pods: {pods.error}
          </p>
        ) : pods.synced ? (
          <PodsTable pods={[...pods.items.values()]} label={`Pods of ${k.kind} ${p.name}`} showNode />
        ) : (
          <p>Loading…</p>
        )}
      </section>
      <section aria-labelledby="workload-events-title">
        <h2 id="workload-events-title">Events</h2>
        <Events events={[...events.items.values()]} />
      </section>
    </main>
  );
}

function Describe({ kind, w }: { kind: string; w: Workload }) {
  const desired = w.spec?.replicas ?? 1;
  const s = w.status ?? {};
  const ready = s.readyReplicas ?? 0;
  const updated = kind === "Deployment" ? (s.updatedReplicas ?? 0) : (s.replicas ?? 0);
  const done = updated >= desired && ready >= desired && (s.replicas ?? 0) === desired;
  const strategy = w.spec?.strategy;
  const ru = strategy?.rollingUpdate;
  const rows: [string, string][] = [
    ["Replicas", `${desired} desired | ${updated} updated | ${s.replicas ?? 0} total | ${s.availableReplicas ?? 0} available | ${ready} ready`],
    ["Rollout", done ? "Complete" : `${Math.min(updated, ready)} of ${desired} updated and ready`],
    ["Selector", pairs(matchLabels(w))],
    ...(kind === "Deployment"
      ? ([
          [
            "Strategy",
            `${strategy?.type ?? "RollingUpdate"}${ru ? ` (max surge ${ru.maxSurge ?? "25%"}, max unavailable ${ru.maxUnavailable ?? "25%"})` : ""}`,
          ],
        ] as [string, string][])
      : []),
    ["Min ready seconds", String(w.spec?.minReadySeconds ?? 0)],
    ["Pod template labels", pairs(w.spec?.template?.metadata?.labels)],
    ["Containers", (w.spec?.template?.spec?.containers ?? []).map((c) => `${c.name} (${c.image ?? "?"})`).join(", ") || "—"],
    ["Observed generation", String(s.observedGeneration ?? "—")],
    ["Created", w.metadata.creationTimestamp ?? "—"],
    ["Labels", pairs(w.metadata.labels)],
  ];
  return (
    <>
      <Details label={`${kind} details`} rows={rows} />
      <p>
        <progress max={Math.max(desired, 1)} value={Math.min(ready, desired)} aria-label={`Rollout of ${kind} ${w.metadata.namespace}/${w.metadata.name}`} />{" "}
        {done ? "Complete" : `${ready} of ${desired} ready`}
      </p>
      <h2>Conditions</h2>
      <Conditions conditions={s.conditions} label={`${kind} conditions`} />
    </>
  );
}
