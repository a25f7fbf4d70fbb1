// A Service, describe-like: type, cluster IP, ports, selector, its
// Endpoints (ready and not ready addresses, the pods behind them), the pods
// its selector picks, its events — live over watches of each.
import { Details, pairs, PodsTable } from "./describe.js";
import { useCollection } from "./live.js";
import { Events } from "./pod.js";
import type { Endpoints, KEvent, Pod, Service } from "./types.js";

export function ServiceDetail(p: { namespace: string; name: string }) {
  const enc = encodeURIComponent;
  const base = `/api/v1/namespaces/${enc(p.namespace)}`;
  const byName = `fieldSelector=${enc(`metadata.name=${p.name}`)}`;
  const services = useCollection<Service>(`${base}/services?${byName}`);
  const endpoints = useCollection<Endpoints>(`${base}/endpoints?${byName}`);
  const events = useCollection<KEvent>(`${base}/events?fieldSelector=${enc(`involvedObject.kind=Service,involvedObject.name=${p.name}`)}`);
  const svc = services.items.get(`${p.namespace}/${p.name}`);
  const selector = svc?.spec?.selector && Object.keys(svc.spec.selector).length ? pairs(svc.spec.selector).replaceAll(", ", ",") : undefined;
  const pods = useCollection<Pod>(selector ? `${base}/pods?labelSelector=${enc(selector)}` : null);
  const ep = endpoints.items.get(`${p.namespace}/${p.name}`);
  const err = services.error ?? endpoints.error;
  return (
    <main aria-labelledby="service-title">
      <p>
        <a href="#/workloads">← Workloads</a>
      </p>
      <h1 id="service-title">
        Service {p.namespace}/{p.name}
      </h1>
      {err ? (
        <p role="alert" class="error">
          Could not load: {err}
        </p>
      ) : null}
      {!services.synced ? (
        <p>Loading…</p>
      ) : !svc ? (
        <p role="status">This Service does not exist (any more).</p>
      ) : (
        <Details
          label="Service details"
          rows={[
            ["Type", svc.spec?.type ?? "ClusterIP"],
            ["Cluster IP", svc.spec?.clusterIP ?? "—"],
            [
              "Ports",
              (svc.spec?.ports ?? [])
                .map(
                  (x) =>
                    `${x.name ? `${x.name} ` : ""}${x.port}→${x.targetPort ?? x.port}/${x.protocol ?? "TCP"}${x.nodePort ? ` (node port ${x.nodePort})` : ""}`,
                )
                .join(", ") || "—",
            ],
            ["Selector", pairs(svc.spec?.selector)],
            ["Session affinity", svc.spec?.sessionAffinity ?? "None"],
            ["Created", svc.metadata.creationTimestamp ?? "—"],
            ["Labels", pairs(svc.metadata.labels)],
          ]}
        />
      )}
      <section aria-labelledby="service-endpoints-title">
        <h2 id="service-endpoints-title">Endpoints</h2>
        {!endpoints.synced ? (
          <p>Loading…</p>
        ) : !ep ? (
          <p>No Endpoints object.</p>
        ) : (
          <table aria-label={`Endpoints of ${p.name}`}>
            <thead>
              <tr>
                <th scope="col">Address</th>
                <th scope="col">Ready</th>
                <th scope="col">Pod</th>
                <th scope="col">Ports</th>
              </tr>
            </thead>
            <tbody>
              {(ep.subsets ?? []).flatMap((s, i) => {
                const ports = (s.ports ?? []).map((x) => (x.name ? `${x.name}:${x.port}` : String(x.port))).join(", ");
                return [
                  ...(s.addresses ?? []).map((a) => (
                    <tr key={`${i}/r/${a.ip}`}>
                      <th scope="row">{a.ip}</th>
                      <td>Yes</td>
                      <td>{a.targetRef ? <a href={`#/pod/${enc(p.namespace)}/${enc(a.targetRef.name)}`}>{a.targetRef.name}</a> : "—"}</td>
                      <td>{ports}</td>
                    </tr>
                  )),
                  ...(s.notReadyAddresses ?? []).map((a) => (
                    <tr key={`${i}/n/${a.ip}`}>
                      <th scope="row">{a.ip}</th>
                      <td>No</td>
                      <td>—</td>
                      <td>{ports}</td>
                    </tr>
                  )),
                ];
              })}
            </tbody>
          </table>
        )}
      </section>
      <section aria-labelledby="service-pods-title">
        <h2 id="service-pods-title">Pods selected</h2>
        {!selector ? (
          <p>No selector (Endpoints managed by hand).</p>
        ) : pods.synced ? (
          <PodsTable pods={[...pods.items.values()]} label={`Pods of Service ${p.name}`} showNode />
        ) : (
          <p>Loading…</p>
        )}
      </section>
      <section aria-labelledby="service-events-title">
        <h2 id="service-events-title">Events</h2>
        <Events events={[...events.items.values()]} />
      </section>
    </main>
  );
}
