// The page: a sign-in form until a token is kept (sessionStorage), then a
// view chosen by the location's hash: #/ nodes × pods, #/pod/NS/NAME a
// pod's detail, #/node/NAME a node's, #/workloads Deployments, RCs and Service
// endpoints, #/workload/deployments|replicationcontrollers/NS/NAME one's detail,
// #/service/NS/NAME a Service's,
// #/events?since=REV&kinds=… the event stream.
import { render } from "preact";
import { useEffect, useState } from "preact/hooks";
import { getJson, setToken, token, unauthorized } from "./api.js";
import { EventsPage } from "./events.js";
import { NodesGrid } from "./grid.js";
import { NodeDetail } from "./node.js";
import { PodDetail } from "./pod.js";
import { ServiceDetail } from "./service.js";
import { WorkloadDetail } from "./workload.js";
import { Workloads } from "./workloads.js";

function useHash(): string {
  const [hash, setHash] = useState(location.hash);
  useEffect(() => {
    const on = () => setHash(location.hash);
    addEventListener("hashchange", on);
    return () => removeEventListener("hashchange", on);
  }, []);
  return hash;
}

function SignIn(p: { onSignedIn(): void; notice: string | undefined }) {
  const [value, setValue] = useState("");
  const [error, setError] = useState<string | undefined>(p.notice);
  const [busy, setBusy] = useState(false);
  const submit = async (e: Event) => {
    e.preventDefault();
    setBusy(true);
    setToken(value.trim());
    try {
      // Any authenticated call: /api is discovery, open to every signed-in user.
      await getJson("/api");
      p.onSignedIn();
    } catch (err) {
      setToken(null);
      setError(`Sign-in failed: ${err instanceof Error ? err.message : String(err)}`);
    } finally {
      setBusy(false);
    }
  };
  return (
    <main class="signin" aria-labelledby="signin-title">
      <h1 id="signin-title">Sign in to choreo</h1>
      <form onSubmit={submit}>
        <label for="token">Bearer token</label>
        <input
          id="token"
          name="token"
          type="password"
          autoComplete="off"
          required
          value={value}
          onInput={(e) => setValue((e.target as HTMLInputElement).value)}
        />
        <p class="hint">Your token stays in this tab (sessionStorage) and goes with every API call.</p>
        <button type="submit" disabled={busy}>
          Sign in
        </button>
        {error ? (
          <p role="alert" class="error">
            {error}
          </p>
        ) : null}
      </form>
    </main>
  );
}

function App() {
  const hash = useHash();
  const [signedIn, setSignedIn] = useState(token() !== null);
  const [notice, setNotice] = useState<string | undefined>(undefined);
  useEffect(() => {
    const on = () => {
      setToken(null);
      setNotice("The api refused your token (401): sign in again.");
      setSignedIn(false);
    };
    unauthorized.addEventListener("unauthorized", on);
    return () => unauthorized.removeEventListener("unauthorized", on);
  }, []);
  if (!signedIn) return <SignIn notice={notice} onSignedIn={() => (setNotice(undefined), setSignedIn(true))} />;
  const bare = hash.replace(/^#\/?/, "");
  const q = bare.indexOf("?");
  const query = new URLSearchParams(q >= 0 ? bare.slice(q + 1) : "");
  const parts = (q >= 0 ? bare.slice(0, q) : bare).split("/").map(decodeURIComponent);
  let view;
  if (parts[0] === "pod" && parts[1] && parts[2]) view = <PodDetail key={`${parts[1]}/${parts[2]}`} namespace={parts[1]} name={parts[2]} />;
  else if (parts[0] === "node" && parts[1]) view = <NodeDetail key={parts[1]} name={parts[1]} />;
  else if (parts[0] === "workload" && parts[1] && parts[2] && parts[3])
    view = <WorkloadDetail key={parts.join("/")} resource={parts[1]} namespace={parts[2]} name={parts[3]} />;
  else if (parts[0] === "service" && parts[1] && parts[2]) view = <ServiceDetail key={`${parts[1]}/${parts[2]}`} namespace={parts[1]} name={parts[2]} />;
  else if (parts[0] === "workloads") view = <Workloads />;
  // A new since (a link followed): a new stream.
  else if (parts[0] === "events") view = <EventsPage key={`events/${query.get("since") ?? ""}`} query={query} />;
  else view = <NodesGrid />;
  // A detail page (pod, node, workload) is none of the menu's pages.
  const current = ["workloads", "events", "pod", "node", "workload", "service"].includes(parts[0]!) ? parts[0] : "nodes";
  return (
    <>
      <header>
        <nav aria-label="Main">
          <span class="brand">choreo</span>
          <a href="#/" aria-current={current === "nodes" ? "page" : undefined}>
            Nodes and pods
          </a>
          <a href="#/workloads" aria-current={current === "workloads" ? "page" : undefined}>
            Workloads
          </a>
          <a href="#/events" aria-current={current === "events" ? "page" : undefined}>
            Event stream
          </a>
          <button
            type="button"
            onClick={() => {
              setToken(null);
              setSignedIn(false);
            }}
          >
            Sign out
          </button>
        </nav>
      </header>
      {view}
    </>
  );
}

const root = document.getElementById("app")!;
root.textContent = ""; // the static "Loading…"
render(<App />, root);
