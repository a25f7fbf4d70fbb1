// Benchmark of the web view (/ui/, issue 17 item 6) in Debian's chromium,
// headless: N nodes (and P pods bound to them, no agent: they stay Pending)
// created directly through the api, then the page loaded R times with a
// token in sessionStorage — first contentful paint, time until the grid
// shows every node (summary "N nodes" and the first row drawn), the DOM's
// size (virtualized: only the rows in view), the JS heap; then a scroll to
// the last node, and the latency of a live update (a pod created while the
// page watches, until its cell is drawn).
//   npm run bench:ui [-- --nodes 5000 --pods 5000 --rounds 3]
import { parseArgs } from "node:util";
import { fromKubeJson } from "@choreo/kit/kube-json";
import { startCluster, type TestCluster } from "@choreo/integration-tests/support/cluster";
import { CHROMIUM, launchChromium } from "@choreo/integration-tests/support/browser";

const { values } = parseArgs({
  options: {
    nodes: { type: "string", default: "5000" },
    pods: { type: "string", default: "5000" },
    rounds: { type: "string", default: "3" },
  },
});
const NODES = Number(values.nodes);
const PODS = Number(values.pods);
const ROUNDS = Number(values.rounds);
const nodeName = (i: number) => `bench-${String(i).padStart(5, "0")}`;

async function createAll(c: TestCluster, count: number, make: (i: number) => Record<string, unknown>): Promise<void> {
  let next = 0;
  await Promise.all(
    Array.from({ length: 64 }, async () => {
      for (let i = next++; i < count; i = next++) await c.client.create(fromKubeJson(make(i)));
    }),
  );
}

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;

if (!CHROMIUM) {
  console.error("chromium is not installed (apt-get install chromium)");
  process.exit(2);
}
const c = await startCluster();
const browser = await launchChromium();
try {
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
} finally {
  await browser.close();
  await c.stop();
}
