// A pod's detail, describe-like — metadata, containers, conditions, events —
// live over watches, with a container's log followed as it is written.
import { useEffect, useState } from "preact/hooks";
import { apiFetch, lines } from "./api.js";
import { useCollection } from "./live.js";
import { phaseOf } from "./phase.js";
import type { ContainerState, KEvent, Pod } from "./types.js";

const MAX_LOG_LINES = 5_000;

export function PodDetail(p: { namespace: string; name: string }) {
  const ns = encodeURIComponent(p.namespace);
  const pods = useCollection<Pod>(`/api/v1/namespaces/${ns}/pods?fieldSelector=${encodeURIComponent(`metadata.name=${p.name}`)}`);
  const events = useCollection<KEvent>(`/api/v1/namespaces/${ns}/events?fieldSelector=${encodeURIComponent(`involvedObject.name=${p.name}`)}`);
  const pod = pods.items.get(`${p.namespace}/${p.name}`);
  const containers = pod?.spec?.containers?.map((c) => c.name) ?? [];
  const [container, setContainer] = useState<string | undefined>(undefined);
  const shown = container && containers.includes(container) ? container : containers[0];
  return (
    <main aria-labelledby="pod-title">
      <p>
        <a href="#/">← Nodes and pods</a>
      </p>
      <h1 id="pod-title">
        Pod {p.namespace}/{p.name}
      </h1>
      {pods.error ? (
        <p role="alert" class="error">
          {pods.error}
        </p>
      ) : null}
      {!pods.synced ? <p>Loading…</p> : !pod ? <p role="status">This pod does not exist (any more).</p> : <Describe pod={pod} />}
      <section aria-labelledby="events-title">
        <h2 id="events-title">Events</h2>
        <Events events={[...events.items.values()]} />
      </section>
      <section aria-labelledby="logs-title">
        <h2 id="logs-title">Logs</h2>
        {containers.length > 1 ? (
          <label>
            Container{" "}
            <select value={shown} onChange={(e) => setContainer((e.target as HTMLSelectElement).value)}>
              {containers.map((c) => (
                <option key={c}>{c}</option>
              ))}
            </select>
          </label>
        ) : null}
        {shown ? <Logs key={`${p.namespace}/${p.name}/${shown}`} namespace={p.namespace} pod={p.name} container={shown} /> : <p>No container.</p>}
      </section>
    </main>
  );
}

function stateText(s: ContainerState | undefined): string {
  if (s?.running) return `Running since ${s.running.startedAt ?? "?"}`;
  if (s?.terminated) return `Terminated (${s.terminated.reason ?? "exit"} ${s.terminated.exitCode ?? ""})`;
  if (s?.waiting) return `Waiting (${s.waiting.reason ?? ""})`;
  return "—";
}

function Describe({ pod }: { pod: Pod }) {
  const m = pod.metadata;
  const st = pod.status ?? {};
  const rows: [string, string][] = [
    ["Phase", phaseOf(pod)],
    ["Node", pod.spec?.nodeName ?? "(not scheduled)"],
    ["Pod IP", st.podIP ?? "—"],
    ["Host IP", st.hostIP ?? "—"],
    ["Start time", st.startTime ?? "—"],
    ["Created", m.creationTimestamp ?? "—"],
    [
      "Labels",
      Object.entries(m.labels ?? {})
        .map(([k, v]) => `${k}=${v}`)
        .join(", ") || "—",
    ],
    ["Controlled by", m.ownerReferences?.map((o) => `${o.kind}/${o.name}`).join(", ") || "—"],
  ];
  if (st.reason) rows.push(["Reason", st.reason]);
  if (st.message) rows.push(["Message", st.message]);
  return (
    <>
      <dl class="describe" aria-label="Pod details">
        {rows.map(([k, v]) => (
          <div key={k}>
            <dt>{k}</dt>
            <dd data-field={k}>{v}</dd>
          </div>
        ))}
      </dl>
      <h2>Containers</h2>
      <table>
        <thead>
          <tr>
            <th scope="col">Name</th>
            <th scope="col">Image</th>
            <th scope="col">State</th>
            <th scope="col">Ready</th>
            <th scope="col">Restarts</th>
          </tr>
        </thead>
        <tbody>
          {(pod.spec?.containers ?? []).map((c) => {
            const s = st.containerStatuses?.find((x) => x.name === c.name);
            return (
              <tr key={c.name}>
                <th scope="row">{c.name}</th>
                <td>{c.image ?? ""}</td>
                <td>{stateText(s?.state)}</td>
                <td>{s?.ready ? "Yes" : "No"}</td>
                <td>{s?.restartCount ?? 0}</td>
              </tr>
            );
          })}
        </tbody>
      </table>
      <h2>Conditions</h2>
      <table>
        <thead>
          <tr>
            <th scope="col">Type</th>
            <th scope="col">Status</th>
            <th scope="col">Reason</th>
            <th scope="col">Since</th>
          </tr>
        </thead>
        <tbody>
          {(st.conditions ?? []).map((c) => (
            <tr key={c.type}>
              <th scope="row">{c.type}</th>
              <td>{c.status}</td>
              <td>{c.reason ?? ""}</td>
              <td>{c.lastTransitionTime ?? ""}</td>
            </tr>
          ))}
        </tbody>
      </table>
    </>
  );
}

export function Events({ events }: { events: KEvent[] }) {
  if (events.length === 0) return <p>No events.</p>;
  const when = (e: KEvent) => e.lastTimestamp ?? e.eventTime ?? e.metadata.creationTimestamp ?? "";
  events.sort((a, b) => (when(a) < when(b) ? -1 : 1));
  return (
    <table>
      <thead>
        <tr>
          <th scope="col">Type</th>
          <th scope="col">Reason</th>
          <th scope="col">When</th>
          <th scope="col">From</th>
          <th scope="col">Message</th>
        </tr>
      </thead>
      <tbody>
        {events.map((e) => (
          <tr key={e.metadata.name}>
            <td>{e.type ?? ""}</td>
            <td>{e.reason ?? ""}</td>
            <td>
              {when(e)}
              {e.count && e.count > 1 ? ` (×${e.count})` : ""}
            </td>
            <td>{e.source?.component ?? e.reportingComponent ?? ""}</td>
            <td>{e.message ?? ""}</td>
          </tr>
        ))}
      </tbody>
    </table>
  );
}

/**
 * GET pods/NAME/log?follow=true, appended as it arrives. While the
 * container has not started the api refuses: retried every 1.5 s.
 */
function Logs(p: { namespace: string; pod: string; container: string }) {
  const [text, setText] = useState<string[]>([]);
  const [state, setState] = useState("Connecting…");
  useEffect(() => {
    const ac = new AbortController();
    const url = `/api/v1/namespaces/${encodeURIComponent(p.namespace)}/pods/${encodeURIComponent(p.pod)}/log?follow=true&tailLines=1000&container=${encodeURIComponent(p.container)}`;
    void (async () => {
      while (!ac.signal.aborted) {
        try {
          const res = await apiFetch(url, { signal: ac.signal, headers: { Accept: "text/plain" } });
          setState("Following");
          for await (const l of lines(res, ac.signal)) setText((t) => (t.length >= MAX_LOG_LINES ? [...t.slice(-MAX_LOG_LINES + 1), l] : [...t, l]));
          if (!ac.signal.aborted) setState("The log stream ended (the container stopped).");
          return;
        } catch (err) {
          if (ac.signal.aborted) return;
          setState(`Waiting: ${err instanceof Error ? err.message : String(err)}`);
          await new Promise((r) => setTimeout(r, 1_500));
        }
      }
    })();
    return () => ac.abort();
  }, [p.namespace, p.pod, p.container]);
  return (
    <>
      <p class="log-state">{state}</p>
      <pre class="logs" role="log" aria-label={`Logs of container ${p.container}`} tabIndex={0}>
        {text.join("\n")}
      </pre>
    </>
  );
}
