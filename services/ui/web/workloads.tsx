// Workloads: Deployments and ReplicationControllers with ready/desired and
// rollout progress; each Service's endpoints (ready and not ready addresses).
import { useCollection } from "./live.js";
import type { Endpoints, Workload } from "./types.js";

interface Row {
  kind: string;
  w: Workload;
}

function rollout(r: Row): { done: boolean; text: string } {
  const desired = r.w.spec?.replicas ?? 1;
  const s = r.w.status ?? {};
  const updated = r.kind === "Deployment" ? (s.updatedReplicas ?? 0) : (s.replicas ?? 0);
  const ready = s.readyReplicas ?? 0;
  const done = updated >= desired && ready >= desired && (s.replicas ?? 0) === desired;
  return { done, text: done ? "Complete" : `${Math.min(updated, ready)} of ${desired} updated and ready` };
}

export function Workloads() {
  const deps = useCollection<Workload>("/apis/apps/v1/deployments");
  const rcs = useCollection<Workload>("/api/v1/replicationcontrollers");
  const eps = useCollection<Endpoints>("/api/v1/endpoints");
  const rows: Row[] = [
    ...[...deps.items.values()].map((w) => ({ kind: "Deployment", w })),
    ...[...rcs.items.values()].map((w) => ({ kind: "ReplicationController", w })),
  ].sort((a, b) => (`${a.w.metadata.namespace}/${a.w.metadata.name}` < `${b.w.metadata.namespace}/${b.w.metadata.name}` ? -1 : 1));
  const err = deps.error ?? rcs.error ?? eps.error;
  return (
    <main aria-labelledby="wl-title">
      <h1 id="wl-title">Workloads</h1>
      {err ? (
        <p role="alert" class="error">
          {err}
        </p>
      ) : null}
      {!deps.synced || !rcs.synced ? (
        <p>Loading…</p>
      ) : rows.length === 0 ? (
        <p>No Deployments or ReplicationControllers.</p>
      ) : (
        <table>
          <thead>
            <tr>
              <th scope="col">Kind</th>
              <th scope="col">Namespace</th>
              <th scope="col">Name</th>
              <th scope="col">Ready</th>
              <th scope="col">Up to date</th>
              <th scope="col">Available</th>
              <th scope="col">Rollout</th>
            </tr>
          </thead>
          <tbody>
            {rows.map((r) => {
              const desired = r.w.spec?.replicas ?? 1;
              const s = r.w.status ?? {};
              const ro = rollout(r);
              const name = `${r.kind} ${r.w.metadata.namespace}/${r.w.metadata.name}`;
              return (
                <tr key={`${r.kind}/${r.w.metadata.namespace}/${r.w.metadata.name}`}>
                  <td>{r.kind}</td>
                  <td>{r.w.metadata.namespace}</td>
                  <th scope="row">
                    <a
                      href={`#/workload/${r.kind === "Deployment" ? "deployments" : "replicationcontrollers"}/${encodeURIComponent(r.w.metadata.namespace ?? "default")}/${encodeURIComponent(r.w.metadata.name)}`}
                    >
                      {r.w.metadata.name}
                    </a>
                  </th>
                  <td>
                    {s.readyReplicas ?? 0}/{desired}
                  </td>
                  <td>{r.kind === "Deployment" ? (s.updatedReplicas ?? 0) : "—"}</td>
                  <td>{s.availableReplicas ?? 0}</td>
                  <td>
                    <progress max={Math.max(desired, 1)} value={Math.min(s.readyReplicas ?? 0, desired)} aria-label={`Rollout of ${name}`} /> {ro.text}
                  </td>
                </tr>
              );
            })}
          </tbody>
        </table>
      )}
      <h2>Service endpoints</h2>
      {!eps.synced ? (
        <p>Loading…</p>
      ) : (
        <table>
          <thead>
            <tr>
              <th scope="col">Namespace</th>
              <th scope="col">Service</th>
              <th scope="col">Ready addresses</th>
              <th scope="col">Not ready</th>
              <th scope="col">Ports</th>
            </tr>
          </thead>
          <tbody>
            {[...eps.items.values()].map((e) => {
              const subsets = e.subsets ?? [];
              const ready = subsets.flatMap((s) => s.addresses ?? []);
              const notReady = subsets.flatMap((s) => s.notReadyAddresses ?? []);
              const ports = [...new Set(subsets.flatMap((s) => (s.ports ?? []).map((p) => (p.name ? `${p.name}:${p.port}` : String(p.port)))))];
              return (
                <tr key={`${e.metadata.namespace}/${e.metadata.name}`}>
                  <td>{e.metadata.namespace}</td>
                  <th scope="row">
                    <a href={`#/service/${encodeURIComponent(e.metadata.namespace ?? "default")}/${encodeURIComponent(e.metadata.name)}`}>{e.metadata.name}</a>
                  </th>
                  <td>{ready.map((a) => (a.targetRef ? `${a.ip} (${a.targetRef.name})` : a.ip)).join(", ") || "none"}</td>
                  <td>{notReady.map((a) => a.ip).join(", ") || "none"}</td>
                  <td>{ports.join(", ")}</td>
                </tr>
              );
            })}
          </tbody>
        </table>
      )}
    </main>
  );
}
