// The event stream: every change as it happens — revision, verb, kind,
// namespace/name, what changed — live over watches of the chosen kinds
// (stream.ts), in revision order, the last 5,000 kept and only the rows in
// view drawn. Filter by kind (what is watched), namespace and name;
// pause and resume (each watch from its last revision); `?since=REV` starts
// after a revision; "this namespace only" watches in the namespace typed (a
// user who may not watch across namespaces), a new stream from the same
// revision. Location: #/events?since=REV&kinds=pods,nodes&ns=NS&name=TEXT[&scope=namespace]
import { useEffect, useLayoutEffect, useMemo, useRef, useState } from "preact/hooks";
import { summary, type Row } from "./changes.js";
import { DEFAULT_KINDS, EventStream, MAX_WATCHES, STREAM_KINDS, type KindState } from "./stream.js";

const ROW = 26;
const OVERSCAN = 20;

/** Where a row's object is shown, if the page has a view of it. */
function linkOf(r: Row): string | undefined {
  const e = encodeURIComponent;
  if (r.verb === "DELETED") return undefined;
  if (r.resource === "pods") return `#/pod/${e(r.namespace)}/${e(r.name)}`;
  if (r.resource === "nodes") return `#/node/${e(r.name)}`;
  if (r.resource === "services" || r.resource === "endpoints") return `#/service/${e(r.namespace)}/${e(r.name)}`;
  if (r.resource === "deployments" || r.resource === "replicationcontrollers") return `#/workload/${r.resource}/${e(r.namespace)}/${e(r.name)}`;
  return undefined;
}

function parseSince(v: string | null): number | undefined {
  return v && /^\d+$/.test(v) ? Number(v) : undefined;
}

function stateText(
  resource: string,
  s: KindState | undefined,
  last: number | undefined,
  everyNamespace: boolean,
): { text: string; alert: boolean } | undefined {
  if (!s || s.state === "live") return undefined;
  if (s.state === "starting") return { text: `${resource}: connecting…`, alert: false };
  if (s.state === "forbidden")
    return {
      text: `Not allowed to watch ${resource} (403): ${s.message}${everyNamespace ? " — allowed in one namespace? Type it in Namespace and tick “this namespace only”." : ""}`,
      alert: true,
    };
  if (s.state === "failed") return { text: `Cannot watch ${resource}: ${s.message}`, alert: true };
  return { text: `${resource}: connection lost (${s.message}) — resuming after revision ${last ?? "?"}`, alert: true };
}

export function EventsPage(p: { query: URLSearchParams }) {
  const since = parseSince(p.query.get("since"));
  const [, setVersion] = useState(0);
  const [kinds, setKinds] = useState<string[]>(() => {
    const asked = (p.query.get("kinds") ?? "").split(",").filter((k) => STREAM_KINDS.some((s) => s.resource === k));
    const wanted = asked.length ? asked : DEFAULT_KINDS;
    return STREAM_KINDS.map((k) => k.resource)
      .filter((r) => wanted.includes(r))
      .slice(0, MAX_WATCHES);
  });
  const [ns, setNs] = useState(p.query.get("ns") ?? "");
  const [name, setName] = useState(p.query.get("name") ?? "");
  const [paused, setPaused] = useState(false);
  const [scoped, setScoped] = useState(p.query.get("scope") === "namespace");
  // The namespace a scoped stream watches: what is typed, once typing pauses.
  const [typedNs, setTypedNs] = useState(ns);
  useEffect(() => {
    const t = setTimeout(() => setTypedNs(ns), 500);
    return () => clearTimeout(t);
  }, [ns]);
  const scopeNs = scoped ? typedNs : "";
  // A new scope is a new stream, from the same starting revision.
  const previous = useRef<EventStream | undefined>(undefined);
  const stream = useMemo(() => new EventStream(previous.current?.start ?? since, scopeNs), [scopeNs]);
  previous.current = stream;

  useEffect(() => {
    stream.onChange(() => setVersion(stream.version));
    return () => stream.onChange(undefined);
  }, [stream]);
  // One watch per chosen kind while not paused; each resumes from its own last revision.
  const chosenKey = kinds.join(",");
  const watching = useRef<AbortController | undefined>(undefined);
  useEffect(() => {
    if (paused) return;
    const ac = new AbortController();
    watching.current = ac;
    const chosen = STREAM_KINDS.filter((k) => kinds.includes(k.resource));
    for (const k of chosen) void stream.follow(k, chosen, ac.signal);
    return () => ac.abort();
  }, [stream, chosenKey, paused]);
  // Paused at once (not after the next paint): nothing received after the click is added.
  const pause = () => {
    watching.current?.abort();
    setPaused(true);
  };
  // The location says what is shown (a link to share or reload).
  const location = (from: number | undefined) => {
    const q = new URLSearchParams();
    if (from !== undefined) q.set("since", String(from));
    q.set("kinds", chosenKey);
    if (ns) q.set("ns", ns);
    if (name) q.set("name", name);
    if (scoped) q.set("scope", "namespace");
    return `#/events?${q.toString().replaceAll("%2C", ",")}`;
  };
  useEffect(() => history.replaceState(null, "", location(since)), [chosenKey, ns, name, scoped]);

  const chosen = new Set(kinds);
  const all = stream.log.kept();
  const rows = all.filter((r) => chosen.has(r.resource) && (!ns || r.namespace === ns) && (!name || r.name.includes(name)));
  const last = stream.log.lastRevision;
  const dropped = stream.log.dropped + (stream.log.rows.length - all.length);
  const resumeLink = location(last || (stream.start ?? 0));

  // Kept in the catalogue's order (the location's kinds are the same whatever order they were ticked in).
  const toggle = (resource: string, on: boolean) => setKinds((ks) => STREAM_KINDS.map((k) => k.resource).filter((r) => (r === resource ? on : ks.includes(r))));
  return (
    <main aria-labelledby="events-page-title" class="events-page">
      <h1 id="events-page-title">Event stream</h1>
      {/* Not a live region: it changes every frame while changes arrive (a screen reader would say nothing else); notices are alerts. */}
      <p class="summary" data-testid="events-status">
        {paused
          ? `Paused at revision ${last || stream.start || "?"}`
          : kinds.length === 0
            ? "No kind chosen: tick one below"
            : stream.start === undefined
              ? "Starting…"
              : `Following ${kinds.length} kinds after revision ${stream.start}`}
        {stream.namespace ? ` in namespace ${stream.namespace}` : ""}
        {` · last revision ${last || "—"} · ${stream.log.received} changes received · ${rows.length} shown`}
        {dropped ? ` · ${dropped} older dropped (the last ${all.length} kept)` : ""}
      </p>
      {stream.startError && stream.start === undefined ? (
        <p role="alert" class="error">
          Could not start: {stream.startError} — retrying
        </p>
      ) : null}
      <ul class="notices" aria-label="Watch notices">
        {kinds.map((k) => {
          const t = paused ? undefined : stateText(k, stream.states.get(k), stream.lastRevision.get(k), !stream.namespace);
          return t ? (
            <li key={k} role={t.alert ? "alert" : undefined} class={t.alert ? "error" : "hint"}>
              {t.text}
            </li>
          ) : null;
        })}
        {stream.gaps
          .filter((g) => chosen.has(g.resource))
          .map((g) => (
            <li key={`${g.resource}/${g.from}`} class="error">
              {g.resource}: the changes between revisions {g.from} and {g.to} are no longer kept (410) — not shown, followed on from {g.to}
            </li>
          ))}
      </ul>
      <div class="toolbar">
        <fieldset class="kinds">
          <legend>Kinds (up to {MAX_WATCHES}, one watch each)</legend>
          {STREAM_KINDS.map((k) => {
            const on = chosen.has(k.resource);
            return (
              <label key={k.resource}>
                <input
                  type="checkbox"
                  checked={on}
                  disabled={!on && kinds.length >= MAX_WATCHES}
                  onChange={(e) => toggle(k.resource, (e.target as HTMLInputElement).checked)}
                />{" "}
                {k.kind}
              </label>
            );
          })}
        </fieldset>
        <label>
          Namespace <input type="search" value={ns} onInput={(e) => setNs((e.target as HTMLInputElement).value.trim())} />
        </label>
        <label>
          <input type="checkbox" checked={scoped} onChange={(e) => setScoped((e.target as HTMLInputElement).checked)} /> this namespace only
        </label>
        <label>
          Name contains <input type="search" value={name} onInput={(e) => setName((e.target as HTMLInputElement).value)} />
        </label>
        <button type="button" aria-pressed={paused} onClick={() => (paused ? setPaused(false) : pause())}>
          {paused ? "Resume" : "Pause"}
        </button>
        {paused ? (
          <a href={resumeLink} data-testid="resume-link">
            Link: continue after revision {last || stream.start}
          </a>
        ) : null}
      </div>
      <ChangeTable rows={rows} />
    </main>
  );
}

/** The rows as a table (ARIA roles, rows virtualized): newest last, following the end while scrolled there. */
function ChangeTable({ rows }: { rows: Row[] }) {
  const ref = useRef<HTMLDivElement>(null);
  const [view, setView] = useState({ top: 0, height: 600 });
  const follow = useRef(true);
  useEffect(() => {
    const el = ref.current!;
    const update = () => {
      follow.current = el.scrollTop + el.clientHeight >= el.scrollHeight - ROW;
      setView({ top: el.scrollTop, height: el.clientHeight });
    };
    const ro = new ResizeObserver(update);
    ro.observe(el);
    el.addEventListener("scroll", update, { passive: true });
    return () => {
      ro.disconnect();
      el.removeEventListener("scroll", update);
    };
  }, []);
  useLayoutEffect(() => {
    const el = ref.current!;
    if (follow.current && el.scrollTop + el.clientHeight < el.scrollHeight) el.scrollTop = el.scrollHeight;
  });
  const first = Math.max(0, Math.floor(view.top / ROW) - OVERSCAN);
  const last = Math.min(rows.length, Math.ceil((view.top + view.height) / ROW) + OVERSCAN);
  const drawn = [];
  for (let i = first; i < last; i++) {
    const r = rows[i]!;
    const link = linkOf(r);
    const full = r.namespace ? `${r.namespace}/${r.name}` : r.name;
    drawn.push(
      <div key={`${r.revision}/${r.resource}`} role="row" aria-rowindex={i + 2} class="ev-row" style={{ top: `${i * ROW}px` }} data-revision={r.revision}>
        <span role="cell" class="ev-rev">
          {r.revision}
        </span>
        <span role="cell" class={`ev-verb verb-${r.verb}`}>
          {r.verb}
        </span>
        <span role="cell" class="ev-kind">
          {r.kind}
        </span>
        <span role="cell" class="ev-name">
          {link ? <a href={link}>{full}</a> : full}
        </span>
        <span role="cell" class="ev-changed">
          {summary(r.changed)}
        </span>
      </div>,
    );
  }
  return (
    <div role="table" aria-label="Changes" aria-rowcount={rows.length + 1} class="ev-table">
      <div role="rowgroup">
        <div role="row" aria-rowindex={1} class="ev-row ev-head">
          <span role="columnheader" class="ev-rev">
            Revision
          </span>
          <span role="columnheader" class="ev-verb">
            Verb
          </span>
          <span role="columnheader" class="ev-kind">
            Kind
          </span>
          <span role="columnheader" class="ev-name">
            Namespace/name
          </span>
          <span role="columnheader" class="ev-changed">
            What changed
          </span>
        </div>
      </div>
      <div ref={ref} class="scroller" tabIndex={0} aria-label="Changes, newest last (arrow keys, Page Up/Down, Home/End scroll)">
        <div role="rowgroup" class="vspace" style={{ height: `${rows.length * ROW}px` }}>
          {rows.length === 0 ? <p class="hint ev-empty">No change yet.</p> : drawn}
        </div>
      </div>
    </div>
  );
}
