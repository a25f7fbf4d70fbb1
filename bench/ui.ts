// Benchmark of the web view (/ui/, issue 17 item 6) in Debian's chromium,
// headless: N nodes (and P pods bound to them, no agent: they stay Pending)
// created directly through the api, then the page loaded R times with a
// token in sessionStorage — first contentful paint, time until the grid
// shows every node (summary "N nodes" and the first row drawn), the DOM's
// size (virtualized: only the rows in view), the JS heap; then a scroll to
// the last node, and the latency of a live update (a pod created while the
// page watches, until its cell is drawn).
// The event stream page (#/events): E ConfigMap creates written by 64
// concurrent writers while the page follows ConfigMaps — the rate written
// and the page's lag behind the last write; then the page opened with
// ?since= before them: the rate it replays and draws the backlog at (the
// last 5,000 rows kept, only those in view drawn).
//   npm run bench:ui [-- --nodes 5000 --pods 5000 --rounds 3 --events 20000]   (--nodes 0 / --events 0: skip a part)
import { parseArgs } from "node:util";
import { unwrap } from "@choreo/kit";
import { fromKubeJson } from "@choreo/kit/kube-json";
import { startCluster, type TestCluster } from "@choreo/integration-tests/support/cluster";
import { CHROMIUM, launchChromium } from "@choreo/integration-tests/support/browser";
import type { Browser } from "puppeteer-core";

const { values } = parseArgs({
  options: {
    nodes: { type: "string", default: "5000" },
    pods: { type: "string", default: "5000" },
    rounds: { type: "string", default: "3" },
    events: { type: "string", default: "20000" },
  },
});
const NODES = Number(values.nodes);
const PODS = Number(values.pods);
const ROUNDS = Number(values.rounds);
const EVENTS = Number(values.events);
const nodeName = (i: number) => `bench-${String(i).padStart(5, "0")}`;

async function createAll(c: TestCluster, count: number, make: (i: number) => Record<string, unknown>): Promise<void> {
  let next = 0;
  await Promise.all(
    Array.from({ length: 64 }, async () => {
      for (let i = next++; i < count; i = next++) await c.client.create(fromKubeJson(make(i)));
    }),
  );
}

/** The grid's part skipped (--nodes 0). */
class Done extends Error {}

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;

if (!CHROMIUM) {
  console.error("chromium is not installed (apt-get install chromium)");
  process.exit(2);
}
/** The event stream page: its live lag and its replay rate with EVENTS ConfigMap changes. */
async function eventsBench(c: TestCluster, browser: Browser): Promise<void> {
  const page = await browser.newPage();
  await page.evaluateOnNewDocument(`sessionStorage.setItem("choreo.token", ${JSON.stringify(c.token)})`);
  await page.goto(`${c.httpUrl}/ui/#/events?kinds=configmaps`);
  await page.waitForFunction(`document.querySelector("[data-testid=events-status]")?.textContent?.includes("after revision")`, { timeout: 30_000 });
  const status = (await page.$eval("[data-testid=events-status]", (e) => e.textContent)) ?? "";
  const since = Number(/after revision (\d+)/.exec(status)![1]);
  const shown = (rev: number) => `document.querySelector('[role=row][data-revision="${rev}"]') !== null`;
  let last = 0;
  const t0 = Date.now();
  let next = 0;
  await Promise.all(
    Array.from({ length: 64 }, async () => {
      for (let i = next++; i < EVENTS; i = next++) {
        const o = await c.client.create(
          fromKubeJson({ apiVersion: "v1", kind: "ConfigMap", metadata: { name: `ev-${i}`, namespace: "default" }, data: { i: String(i) } }),
        );
        last = Math.max(last, Number(unwrap(o).metadata?.resourceVersion ?? 0));
      }
    }),
  );
  const written = Date.now();
  await page.waitForFunction(shown(last), { timeout: 300_000, polling: "raf" });
  const live = Date.now();
  const liveHeap = ((await page.evaluate(`performance.memory?.usedJSHeapSize ?? 0`)) as number) / 2 ** 20;
  const liveDom = (await page.evaluate(`document.getElementsByTagName("*").length`)) as number;
  // The backlog: the same changes replayed after `since` (a new page: the stream starts empty).
  // The page's main thread busy (Chrome's TaskDuration) during each replay: its headroom beyond what the api delivered.
  const replays: number[] = [];
  const busy: number[] = [];
  for (let r = 0; r < ROUNDS; r++) {
    await page.goto("about:blank");
    const before = (await page.metrics()).TaskDuration ?? 0;
    const t = Date.now();
    await page.goto(`${c.httpUrl}/ui/#/events?since=${since}&kinds=configmaps`);
    await page.waitForFunction(shown(last), { timeout: 300_000, polling: "raf" });
    replays.push(Date.now() - t);
    busy.push(((await page.metrics()).TaskDuration ?? 0) - before);
  }
  const kept = (await page.$eval("[data-testid=events-status]", (e) => e.textContent)) ?? "";
  console.log(`events page after the replay: ${kept}`);
  const writeRate = (EVENTS * 1000) / (written - t0);
  const replayMs = median(replays);
  console.log(
    [
      `| changes | written (64 writers) | live: last change drawn after the last write | live: page rate | replay ?since= (load → last row drawn) | replay rate | page main thread busy in the replay | → events/s per busy second | DOM elements | JS heap |`,
      `| ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |`,
      `| ${EVENTS} | ${written - t0} ms (${writeRate.toFixed(0)}/s) | ${live - written} ms | ${((EVENTS * 1000) / (live - t0)).toFixed(0)}/s | ${replayMs} ms | ${((EVENTS * 1000) / replayMs).toFixed(0)}/s | ${(median(busy) * 1000).toFixed(0)} ms | ${(EVENTS / median(busy)).toFixed(0)}/s | ${liveDom} | ${liveHeap.toFixed(1)} MiB |`,
    ].join("\n"),
  );
  await page.close();
}

const c = await startCluster();
const browser = await launchChromium();
try {
  if (EVENTS > 0) await eventsBench(c, browser);
  if (NODES === 0) throw new Done();
  let t = Date.now();
  await createAll(c, NODES, (i) => ({ apiVersion: "v1", kind: "Node", metadata: { name: nodeName(i) } }));
  await createAll(c, PODS, (i) => ({
    apiVersion: "v1",
    kind: "Pod",
    metadata: { name: `p-${i}`, namespace: "default" },
    spec: { nodeName: nodeName(i % NODES), containers: [{ name: "app", image: "busybox" }] },
  }));
  console.log(`created ${NODES} nodes and ${PODS} pods in ${Date.now() - t} ms`);

  const page = await browser.newPage();
  const token = c.token;
  // Signed in already (what the sign-in form keeps); page-side code is given as strings: this file is typed for Node.
  await page.evaluateOnNewDocument(`sessionStorage.setItem("choreo.token", ${JSON.stringify(token)})`);
  // When the first node's row is drawn (a page of the lists is enough).
  await page.evaluateOnNewDocument(`new MutationObserver((_, o) => {
    if (document.querySelector('section[aria-label^="Node "]')) { window.firstRow = performance.now(); o.disconnect(); }
  }).observe(document, { childList: true, subtree: true })`);
  const rows: { fcp: number; grid: number; domNodes: number; heapMb: number; lists: number; firstRow: number }[] = [];
  for (let r = 0; r < ROUNDS; r++) {
    await page.goto(`${c.httpUrl}/ui/`, { waitUntil: "domcontentloaded" });
    await page.waitForFunction(`document.querySelector("[data-testid=summary]")?.textContent?.startsWith("${NODES} nodes")`, {
      timeout: 120_000,
      polling: "raf",
    });
    await page.waitForSelector(`section[aria-label="Node ${nodeName(0)}"]`);
    const m = (await page.evaluate(`({
      grid: performance.now(),
      firstRow: window.firstRow ?? -1,
      fcp: performance.getEntriesByName("first-contentful-paint")[0]?.startTime ?? -1,
      domNodes: document.getElementsByTagName("*").length,
      heapMb: (performance.memory?.usedJSHeapSize ?? 0) / 2 ** 20,
      // The two lists (nodes, pods; pages of 500) as fetched: when the last page's body had arrived.
      lists: Math.max(0, ...performance.getEntriesByType("resource").filter((e) => e.name.includes("/api/v1/nodes?limit=") || e.name.includes("/api/v1/pods?limit=")).map((e) => e.responseEnd)),
    })`)) as { grid: number; fcp: number; domNodes: number; heapMb: number; lists: number; firstRow: number };
    rows.push(m);
    console.log(
      `round ${r + 1}: first contentful paint ${m.fcp.toFixed(0)} ms, first row drawn ${m.firstRow.toFixed(0)} ms, lists of nodes and pods received ${m.lists.toFixed(0)} ms, ${NODES} nodes shown ${m.grid.toFixed(0)} ms, ${m.domNodes} DOM elements, JS heap ${m.heapMb.toFixed(1)} MiB`,
    );
  }
  // Scroll to the end: the last node's row drawn.
  t = Date.now();
  await page.evaluate(`(() => { const el = document.querySelector(".scroller"); el.scrollTop = el.scrollHeight; })()`);
  await page.waitForSelector(`section[aria-label="Node ${nodeName(NODES - 1)}"]`);
  const scrollMs = Date.now() - t;
  await page.evaluate(`document.querySelector(".scroller").scrollTop = 0`);
  // A live update at this size: a pod on the first node, until its cell is drawn.
  const updates: number[] = [];
  for (let r = 0; r < ROUNDS; r++) {
    t = Date.now();
    await c.client.create(
      fromKubeJson({
        apiVersion: "v1",
        kind: "Pod",
        metadata: { name: `live-${r}`, namespace: "default" },
        spec: { nodeName: nodeName(0), containers: [{ name: "app", image: "busybox" }] },
      }),
    );
    await page.waitForSelector(`a[aria-label="Pod default/live-${r}: Pending"]`, { timeout: 30_000 });
    updates.push(Date.now() - t);
  }
  const domNodes = rows[rows.length - 1]!.domNodes;
  console.log(
    [
      `| nodes | pods | first contentful paint | first row drawn | lists received | all nodes shown | DOM elements | JS heap | scroll to the last node | live update (create → cell drawn) |`,
      `| ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |`,
      `| ${NODES} | ${PODS} | ${median(rows.map((x) => x.fcp)).toFixed(0)} ms | ${median(rows.map((x) => x.firstRow)).toFixed(0)} ms | ${median(rows.map((x) => x.lists)).toFixed(0)} ms | ${median(rows.map((x) => x.grid)).toFixed(0)} ms | ${domNodes} | ${median(rows.map((x) => x.heapMb)).toFixed(1)} MiB | ${scrollMs} ms | ${median(updates)} ms |`,
    ].join("\n"),
  );
} catch (err) {
  if (!(err instanceof Done)) throw err;
} finally {
  await browser.close();
  await c.stop();
}
