// Pieces of the describe-like pages (node, workload): a details list, a
// conditions table, a table of pods linking to their pages.
import { phaseOf } from "./phase.js";
import type { Condition, Pod } from "./types.js";

/** `name=value, …` or — */
export function pairs(m: Record<string, string> | undefined): string {
  return (
    Object.entries(m ?? {})
      .map(([k, v]) => `${k}=${v}`)
      .join(", ") || "—"
  );
}

/** A describe-like list: each value in a `dd[data-field=NAME]`. */
export function Details(p: { label: string; rows: [string, string][] }) {
  return (
    <dl class="describe" aria-label={p.label}>
      {p.rows.map(([k, v]) => (
        <div key={k}>
          <dt>{k}</dt>
          <dd data-field={k}>{v}</dd>
        </div>
      ))}
    </dl>
  );
}

export function Conditions(p: { conditions: Condition[] | undefined; label: string }) {
  if (!p.conditions?.length) return <p>No conditions.</p>;
  return (
    <table aria-label={p.label}>
      <thead>
        <tr>
          <th scope="col">Type</th>
          <th scope="col">Status</th>
          <th scope="col">Reason</th>
          <th scope="col">Message</th>
          <th scope="col">Since</th>
        </tr>
      </thead>
      <tbody>
        {p.conditions.map((c) => (
          <tr key={c.type}>
            <th scope="row">{c.type}</th>
            <td>{c.status}</td>
            <td>{c.reason ?? ""}</td>
            <td>{c.message ?? ""}</td>
            <td>{c.lastTransitionTime ?? ""}</td>
          </tr>
        ))}
      </tbody>
    </table>
  );
}

export function PodsTable(p: { pods: Pod[]; label: string; showNode?: boolean }) {
  if (p.pods.length === 0) return <p>No pods.</p>;
  const pods = [...p.pods].sort((a, b) => (`${a.metadata.namespace}/${a.metadata.name}` < `${b.metadata.namespace}/${b.metadata.name}` ? -1 : 1));
  return (
    <table aria-label={p.label}>
      <thead>
        <tr>
          <th scope="col">Pod</th>
          <th scope="col">Phase</th>
          <th scope="col">Ready</th>
          <th scope="col">Restarts</th>
          <th scope="col">IP</th>
          {p.showNode ? <th scope="col">Node</th> : null}
        </tr>
      </thead>
      <tbody>
        {pods.map((pod) => {
          const ns = pod.metadata.namespace ?? "default";
          const cs = pod.status?.containerStatuses ?? [];
          return (
            <tr key={`${ns}/${pod.metadata.name}`}>
              <th scope="row">
                <a href={`#/pod/${encodeURIComponent(ns)}/${encodeURIComponent(pod.metadata.name)}`}>
                  {ns}/{pod.metadata.name}
                </a>
              </th>
              <td>{phaseOf(pod)}</td>
              <td>
                {cs.filter((c) => c.ready).length}/{pod.spec?.containers?.length ?? cs.length}
              </td>
              <td>{cs.reduce((n, c) => n + (c.restartCount ?? 0), 0)}</td>
              <td>{pod.status?.podIP ?? "—"}</td>
              {p.showNode ? (
                <td>{pod.spec?.nodeName ? <a href={`#/node/${encodeURIComponent(pod.spec.nodeName)}`}>{pod.spec.nodeName}</a> : "(not scheduled)"}</td>
              ) : null}
            </tr>
          );
        })}
      </tbody>
    </table>
  );
}
