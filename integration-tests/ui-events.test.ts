// test-tier: servers
// The web view's event stream (#/events) in a real browser: Debian's
// chromium, headless, driven by puppeteer-core, against a real api. Objects
// created, scaled, changed and deleted through the api appear as rows in
// revision order with their verbs and what changed — compared with the
// revisions the writes returned; a kind filter; pause and resume; kill -9 of
// the page's api (changes written through a second api meanwhile): the page
// resumes from its last revision, no duplicate, no gap;
// ?since= replays from a revision; a user who may watch ConfigMaps but not
// Deployments sees a 403 notice for Deployments and ConfigMaps still live,
// then, allowed Deployments in default only, watches that namespace.
// Screenshots go to a kept temporary folder whose paths are printed.
import assert from "node:assert/strict";
import { mkdtempSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { after, before, describe, it } from "node:test";
import type { Browser, Page } from "puppeteer-core";
import { CHROMIUM, launchChromium } from "./support/browser.js";
import { startCluster, withLogsOnFailure, type TestCluster } from "./support/cluster.js";
import { http } from "./support/http.js";

/** A row as a person reads it. */
interface Shown {
  revision: number;
  verb: string;
  kind: string;
  name: string;
  changed: string;
}

/** A change the test made: what the api answered. */
interface Written {
  revision: number;
  verb: string;
  kind: string;
  name: string;
}

/** The rows of the changes table in the DOM (a handful here: all drawn), read from their cells' text. */
async function rowsOf(page: Page): Promise<Shown[]> {
  const cells = (await page.evaluate(
    `[...document.querySelectorAll('[role=table][aria-label=Changes] [role=row][data-revision]')].map((r) => [...r.querySelectorAll('[role=cell]')].map((c) => c.textContent))`,
  )) as string[][];
  return cells.map(([rev, verb, kind, name, changed]) => ({ revision: Number(rev), verb: verb!, kind: kind!, name: name!, changed: changed ?? "" }));
}

function textIncludes(selector: string, text: string): string {
  return `[...document.querySelectorAll(${JSON.stringify(selector)})].some((e) => e.innerText.includes(${JSON.stringify(text)}))`;
}

/** The page shows a row of `revision`. */
const rowShown = (revision: number) => `!!document.querySelector('[role=row][data-revision="${revision}"]')`;

describe(
  "the web view's event stream in a browser",
  { skip: CHROMIUM ? false : "chromium is not installed (apt-get install chromium; scripts/ensure-deps.sh --test)" },
  () => {
    let c: TestCluster;
    let browser: Browser;
    let page: Page;
    const written: Written[] = [];
    let startRevision = 0;
    const shots = mkdtempSync(path.join(os.tmpdir(), "choreo-ui-events-shots-"));
    const shot = async (p: Page, name: string) => {
      const file = path.join(shots, `${name}.png`);
      await p.screenshot({ path: file, fullPage: true });
      console.log(`screenshot: ${file}`);
    };
    const admin = (method: string, p: string, body?: unknown, ct?: string) => http(c.httpUrl, c.token, method, p, body, ct);
    /** The api the page does not talk to (api 1): writes while api 0 is down. */
    let other = false;
    /** A write through the api (0, or 1 when `other`); its answer's resourceVersion is the change's revision. */
    const write = async (verb: string, kind: string, name: string, method: string, p: string, body?: unknown, ct?: string) => {
      const base = other ? `http://127.0.0.1:${c.apis[1]!.httpPort}` : c.httpUrl;
      const r = await http(base, c.token, method, p, body, ct);
      assert.ok(r.status >= 200 && r.status < 300, `${method} ${p}: ${r.status} ${r.text}`);
      const revision = Number((r.json["metadata"] as { resourceVersion?: string } | undefined)?.resourceVersion);
      assert.ok(revision > 0, `${method} ${p} answered a resourceVersion: ${r.text}`);
      written.push({ revision, verb, kind, name });
      return revision;
    };
    const cm = (name: string, data: Record<string, string>) => ({ apiVersion: "v1", kind: "ConfigMap", metadata: { name, namespace: "default" }, data });
    const CMS = "/api/v1/namespaces/default/configmaps";
    const DEPLOYS = "/apis/apps/v1/namespaces/default/deployments";
    /** The rows of the objects this test wrote (names ev-…), as revision, verb, kind, name. */
    const ours = (rows: Shown[]) =>
      rows.filter((r) => r.name.startsWith("default/ev-")).map(({ revision, verb, kind, name }) => ({ revision, verb, kind, name }));

    before(async () => {
      // Two apis: the page talks to api 0; while it is down, changes are written through api 1.
      c = await startCluster({ apis: 2 });
      browser = await launchChromium();
      page = await browser.newPage();
      // Signed in already (the sign-in form is the other test's).
      await page.evaluateOnNewDocument(`sessionStorage.setItem("choreo.token", ${JSON.stringify(c.token)})`);
    });
    after(async () => {
      await browser?.close();
      await c?.stop();
    });

    it("shows objects created, scaled, changed and deleted through the api, in revision order, with their verbs", async () => {
      await withLogsOnFailure(c, async () => {
        await page.goto(`${c.httpUrl}/ui/#/events?kinds=configmaps,deployments&ns=default`);
        await page.waitForFunction(textIncludes("[data-testid=events-status]", "Following 2 kinds after revision"), { timeout: 10_000 });
        const status = (await page.$eval("[data-testid=events-status]", (e) => e.textContent)) ?? "";
        startRevision = Number(/after revision (\d+)/.exec(status)![1]);
        assert.ok(startRevision > 0);
        await write("ADDED", "ConfigMap", "default/ev-cm-a", "POST", CMS, cm("ev-cm-a", { k: "1" }));
        await write("ADDED", "Deployment", "default/ev-web", "POST", DEPLOYS, {
          apiVersion: "apps/v1",
          kind: "Deployment",
          metadata: { name: "ev-web", namespace: "default" },
          spec: {
            replicas: 1,
            selector: { matchLabels: { app: "ev-web" } },
            template: { metadata: { labels: { app: "ev-web" } }, spec: { containers: [{ name: "app", image: "busybox" }] } },
          },
        });
        await write("MODIFIED", "ConfigMap", "default/ev-cm-a", "PATCH", `${CMS}/ev-cm-a`, { data: { k: "2" } }, "application/merge-patch+json");
        await write("MODIFIED", "Deployment", "default/ev-web", "PATCH", `${DEPLOYS}/ev-web/scale`, { spec: { replicas: 3 } }, "application/merge-patch+json");
        await write("DELETED", "ConfigMap", "default/ev-cm-a", "DELETE", `${CMS}/ev-cm-a`);
        await page.waitForFunction(rowShown(written.at(-1)!.revision), { timeout: 10_000 });
        const rows = await rowsOf(page);
        console.log(rows.map((r) => `${r.revision} ${r.verb} ${r.kind} ${r.name} ${r.changed}`).join("\n"));
        assert.deepEqual(ours(rows), written);
        assert.deepEqual(
          rows.map((r) => r.revision),
          rows.map((r) => r.revision).sort((a, b) => a - b),
          "rows in revision order",
        );
        // What changed, as `choreo events` says it.
        const changes = rows.filter((r) => r.verb === "MODIFIED").map((r) => `${r.kind} ${r.changed}`);
        assert.ok(changes.includes("ConfigMap data"), changes.join("; "));
        assert.ok(
          changes.some((x) => x.startsWith("Deployment ") && x.includes("spec.replicas")),
          changes.join("; "),
        );
        await shot(page, "1-events");
      });
    });

    it("filters by kind and by name", async () => {
      await withLogsOnFailure(c, async () => {
        await page.click("::-p-aria(ConfigMap)[type=checkbox]");
        await page.waitForFunction(`![...document.querySelectorAll('[role=row] [role=cell]:nth-child(3)')].some((e) => e.textContent === "ConfigMap")`, {
          timeout: 5_000,
        });
        const rows = await rowsOf(page);
        assert.ok(rows.length > 0);
        assert.deepEqual([...new Set(rows.map((r) => r.kind))], ["Deployment"]);
        // The location says what is shown (a link to share).
        await page.waitForFunction(`/kinds=deployments(&|$)/.test(location.hash)`, { timeout: 5_000 });
        await shot(page, "2-kind-filter");
        await page.click("::-p-aria(ConfigMap)[type=checkbox]");
        await page.type("::-p-aria(Name contains)", "cm-a");
        await page.waitForFunction(`![...document.querySelectorAll('[role=row] [role=cell]:nth-child(3)')].some((e) => e.textContent === "Deployment")`, {
          timeout: 5_000,
        });
        assert.deepEqual(
          (await rowsOf(page)).map((r) => r.verb),
          ["ADDED", "MODIFIED", "DELETED"],
        );
        await page.click("::-p-aria(Name contains)", { count: 3 });
        await page.keyboard.press("Backspace");
        await page.waitForFunction(`document.querySelectorAll('[role=row][data-revision]').length === ${written.length}`, { timeout: 5_000 });
      });
    });

    it("pauses, then resumes from where it stopped: the change made meanwhile shown once", async () => {
      await withLogsOnFailure(c, async () => {
        await page.click("::-p-aria(Pause)");
        await page.waitForFunction(textIncludes("[data-testid=events-status]", "Paused at revision"), { timeout: 5_000 });
        // A link to continue later from the last revision shown, with the same kinds and filters.
        const href = await page.$eval("[data-testid=resume-link]", (e) => e.getAttribute("href"));
        assert.equal(href, `#/events?since=${written.at(-1)!.revision}&kinds=deployments,configmaps&ns=default`);
        const rev = await write("ADDED", "ConfigMap", "default/ev-cm-b", "POST", CMS, cm("ev-cm-b", { k: "1" }));
        // Let a live watch have delivered it, had one been open.
        await new Promise((r) => setTimeout(r, 1_000));
        assert.equal(await page.evaluate(rowShown(rev)), false, "paused: nothing new is drawn");
        await shot(page, "3-paused");
        await page.click("::-p-aria(Resume)");
        await page.waitForFunction(rowShown(rev), { timeout: 10_000 });
        assert.deepEqual(ours(await rowsOf(page)), written);
      });
    });

    it("goes on after its api is killed -9 and restarted: the changes made meanwhile (through another api) and after, from its last revision, no duplicate, no gap", async () => {
      await withLogsOnFailure(c, async () => {
        await c.killApi(0);
        await page.waitForFunction(textIncludes("[role=alert]", "connection lost"), { timeout: 15_000 });
        const notice = (await page.evaluate(`[...document.querySelectorAll("[role=alert]")].map((e) => e.innerText).join("\\n")`)) as string;
        console.log(`while the api is down: ${notice}`);
        assert.match(notice, /resuming after revision \d+/);
        await shot(page, "4-api-down");
        // While the page's api is down: changes through the other api.
        other = true;
        try {
          await write("ADDED", "ConfigMap", "default/ev-cm-c", "POST", CMS, cm("ev-cm-c", { k: "1" }));
          await write("MODIFIED", "ConfigMap", "default/ev-cm-c", "PATCH", `${CMS}/ev-cm-c`, { data: { k: "2", j: "3" } }, "application/merge-patch+json");
          await write(
            "MODIFIED",
            "Deployment",
            "default/ev-web",
            "PATCH",
            `${DEPLOYS}/ev-web/scale`,
            { spec: { replicas: 1 } },
            "application/merge-patch+json",
          );
        } finally {
          other = false;
        }
        await c.startApi(0);
        const restarted = Date.now();
        // And at once after its restart: before or while the page reconnects.
        await write("DELETED", "ConfigMap", "default/ev-cm-b", "DELETE", `${CMS}/ev-cm-b`);
        await write("DELETED", "Deployment", "default/ev-web", "DELETE", `${DEPLOYS}/ev-web`);
        await page.waitForFunction(rowShown(written.at(-1)!.revision), { timeout: 30_000 });
        console.log(`after the api's restart, the last change drawn ${Date.now() - restarted} ms later`);
        await page.waitForFunction(`!document.querySelector("[role=alert]")`, { timeout: 15_000 });
        const rows = await rowsOf(page);
        assert.deepEqual(ours(rows), written, "every change once, in order");
        assert.equal(new Set(rows.map((r) => r.revision)).size, rows.length, "no revision twice");
        await shot(page, "5-api-back");
      });
    });

    it("replays from a revision given as ?since= (the same rows)", async () => {
      await withLogsOnFailure(c, async () => {
        await page.goto(`${c.httpUrl}/ui/#/events?since=${startRevision}&kinds=configmaps,deployments&ns=default`);
        // Every row, not only the last one written: each kind is replayed by its own watch, and the Deployments'
        // (which holds the last change) may be drawn before the ConfigMaps' (seen in CI: only the Deployment rows).
        await page.waitForFunction(written.map((w) => rowShown(w.revision)).join(" && "), { timeout: 10_000 });
        assert.match((await page.$eval("[data-testid=events-status]", (e) => e.textContent)) ?? "", new RegExp(`after revision ${startRevision} `));
        assert.deepEqual(ours(await rowsOf(page)), written);
        await shot(page, "6-since");
      });
    });

    it("opens describe-like pages of a node, a Deployment (from the stream's rows, with the keyboard) and a Service", async () => {
      await withLogsOnFailure(c, async () => {
        // A Node and pods written directly (no agent, no controller here): what the pages show is what was written.
        assert.equal(
          (
            await admin("POST", "/api/v1/nodes", {
              apiVersion: "v1",
              kind: "Node",
              metadata: { name: "ev-node", labels: { zone: "z1" } },
              spec: { taints: [{ key: "dedicated", value: "ui", effect: "NoSchedule" }] },
              status: { capacity: { cpu: "4", pods: "110" }, addresses: [{ type: "InternalIP", address: "10.9.0.7" }] },
            })
          ).status,
          201,
        );
        const d = await admin("POST", DEPLOYS, {
          apiVersion: "apps/v1",
          kind: "Deployment",
          metadata: { name: "ev-api", namespace: "default" },
          spec: {
            replicas: 2,
            selector: { matchLabels: { app: "ev-api" } },
            template: { metadata: { labels: { app: "ev-api" } }, spec: { containers: [{ name: "app", image: "busybox:1.36" }] } },
          },
        });
        assert.equal(d.status, 201, d.text);
        for (const name of ["ev-api-1", "ev-other"])
          assert.equal(
            (
              await admin("POST", "/api/v1/namespaces/default/pods", {
                apiVersion: "v1",
                kind: "Pod",
                metadata: { name, namespace: "default", labels: { app: name === "ev-other" ? "other" : "ev-api" } },
                spec: { nodeName: "ev-node", containers: [{ name: "app", image: "busybox" }] },
              })
            ).status,
            201,
          );
        await page.goto(`${c.httpUrl}/ui/#/events?since=${startRevision}&kinds=nodes,deployments`);
        const link = "[role=row] a::-p-text(default/ev-api)";
        await page.waitForSelector(link, { timeout: 10_000 });
        // Keyboard: focus the row's link, Enter.
        await page.focus(link);
        await page.keyboard.press("Enter");
        await page.waitForSelector("::-p-aria(Deployment details)", { timeout: 10_000 });
        assert.equal(await page.$eval("h1", (e) => e.textContent), "Deployment default/ev-api");
        assert.match((await page.$eval('dd[data-field="Replicas"]', (e) => e.textContent)) ?? "", /^2 desired \| 0 updated/);
        assert.equal(await page.$eval('dd[data-field="Selector"]', (e) => e.textContent), "app=ev-api");
        assert.equal(await page.$eval('dd[data-field="Containers"]', (e) => e.textContent), "app (busybox:1.36)");
        await page.waitForSelector("::-p-aria(Pods of Deployment ev-api)");
        const podRows = (await page.$$eval("table[aria-label='Pods of Deployment ev-api'] tbody th", (es) => es.map((e) => e.textContent))) as string[];
        assert.deepEqual(podRows, ["default/ev-api-1"], "its pods by its selector, not the others");
        await shot(page, "8-deployment");
        // Its pod's node: the node's page.
        await page.click("table[aria-label='Pods of Deployment ev-api'] a::-p-text(ev-node)");
        await page.waitForSelector("::-p-aria(Node details)", { timeout: 10_000 });
        assert.equal(await page.$eval("h1", (e) => e.textContent), "Node ev-node");
        assert.equal(await page.$eval('dd[data-field="Taints"]', (e) => e.textContent), "dedicated=ui:NoSchedule");
        assert.equal(await page.$eval('dd[data-field="Addresses"]', (e) => e.textContent), "InternalIP: 10.9.0.7");
        assert.equal(await page.$eval('dd[data-field="Labels"]', (e) => e.textContent), "zone=z1");
        await page.waitForFunction(`document.querySelectorAll("table[aria-label='Pods on ev-node'] tbody tr").length === 2`, { timeout: 10_000 });
        await shot(page, "9-node");
        // Live: a pod deleted (no agent here: at once) leaves the node's table without a reload.
        assert.equal((await admin("DELETE", "/api/v1/namespaces/default/pods/ev-other?gracePeriodSeconds=0")).status, 200);
        await page.waitForFunction(`document.querySelectorAll("table[aria-label='Pods on ev-node'] tbody tr").length === 1`, { timeout: 10_000 });
        // A Service selecting the Deployment's pods, its Endpoints written by hand (no endpoints controller here).
        const svc = await admin("POST", "/api/v1/namespaces/default/services", {
          apiVersion: "v1",
          kind: "Service",
          metadata: { name: "ev-api", namespace: "default" },
          spec: { selector: { app: "ev-api" }, ports: [{ name: "http", port: 80, targetPort: 8080 }] },
        });
        assert.equal(svc.status, 201, svc.text);
        const eps = await admin("POST", "/api/v1/namespaces/default/endpoints", {
          apiVersion: "v1",
          kind: "Endpoints",
          metadata: { name: "ev-api", namespace: "default" },
          subsets: [
            {
              addresses: [{ ip: "10.244.0.5", targetRef: { kind: "Pod", name: "ev-api-1", namespace: "default" } }],
              notReadyAddresses: [{ ip: "10.244.0.6" }],
              ports: [{ name: "http", port: 8080 }],
            },
          ],
        });
        assert.equal(eps.status, 201, eps.text);
        await page.goto(`${c.httpUrl}/ui/#/workloads`);
        await (await page.waitForSelector("a[href='#/service/default/ev-api']", { timeout: 10_000 }))!.click();
        await page.waitForSelector("::-p-aria(Service details)", { timeout: 10_000 });
        assert.equal(await page.$eval("h1", (e) => e.textContent), "Service default/ev-api");
        assert.equal(await page.$eval('dd[data-field="Ports"]', (e) => e.textContent), "http 80→8080/TCP");
        assert.match((await page.$eval('dd[data-field="Cluster IP"]', (e) => e.textContent)) ?? "", /^\d+\.\d+\.\d+\.\d+$/);
        await page.waitForSelector("::-p-aria(Endpoints of ev-api)", { timeout: 10_000 });
        const epRows = (await page.$$eval("table[aria-label='Endpoints of ev-api'] tbody tr", (es) =>
          es.map((e) => [...e.children].map((c) => c.textContent).join(" ")),
        )) as string[];
        assert.deepEqual(epRows, ["10.244.0.5 Yes ev-api-1 http:8080", "10.244.0.6 No — http:8080"]);
        await page.waitForFunction(`document.querySelectorAll("table[aria-label='Pods of Service ev-api'] tbody tr").length === 1`, { timeout: 10_000 });
        await shot(page, "11-service");
      });
    });

    it("tells a user who may not watch a kind so (403), the other kinds live", async () => {
      await withLogsOnFailure(c, async () => {
        assert.equal(
          (await admin("POST", "/api/v1/namespaces/default/serviceaccounts", { apiVersion: "v1", kind: "ServiceAccount", metadata: { name: "cm-watcher" } }))
            .status,
          201,
        );
        const role = await admin("POST", "/apis/rbac.authorization.k8s.io/v1/clusterroles", {
          apiVersion: "rbac.authorization.k8s.io/v1",
          kind: "ClusterRole",
          metadata: { name: "cm-watcher" },
          rules: [{ apiGroups: [""], resources: ["configmaps"], verbs: ["get", "list", "watch"] }],
        });
        assert.equal(role.status, 201, role.text);
        const rb = await admin("POST", "/apis/rbac.authorization.k8s.io/v1/clusterrolebindings", {
          apiVersion: "rbac.authorization.k8s.io/v1",
          kind: "ClusterRoleBinding",
          metadata: { name: "cm-watcher" },
          roleRef: { apiGroup: "rbac.authorization.k8s.io", kind: "ClusterRole", name: "cm-watcher" },
          subjects: [{ kind: "ServiceAccount", name: "cm-watcher", namespace: "default" }],
        });
        assert.equal(rb.status, 201, rb.text);
        const tr = await admin("POST", "/api/v1/namespaces/default/serviceaccounts/cm-watcher/token", {
          apiVersion: "authentication.k8s.io/v1",
          kind: "TokenRequest",
          spec: {},
        });
        assert.equal(tr.status, 201, tr.text);
        const viewer = (tr.json["status"] as { token: string }).token;
        // The authorizer learns the binding from its watch.
        for (let i = 0; (await http(c.httpUrl, viewer, "GET", "/api/v1/configmaps?limit=1")).status !== 200; i++) {
          assert.ok(i < 300, "the viewer may list configmaps");
          await new Promise((r) => setTimeout(r, 100));
        }
        const ctx = await browser.createBrowserContext();
        try {
          const vp = await ctx.newPage();
          await vp.evaluateOnNewDocument(`sessionStorage.setItem("choreo.token", ${JSON.stringify(viewer)})`);
          await vp.goto(`${c.httpUrl}/ui/#/events?kinds=configmaps,deployments&ns=default`);
          await vp.waitForFunction(textIncludes("[role=alert]", "Not allowed to watch deployments (403)"), { timeout: 10_000 });
          const alerts = (await vp.evaluate(`[...document.querySelectorAll("[role=alert]")].map((e) => e.innerText)`)) as string[];
          console.log(`the viewer's notices: ${alerts.join(" | ")}`);
          assert.equal(alerts.length, 1, "configmaps are not refused");
          assert.match(alerts[0]!, /forbidden/);
          await vp.waitForFunction(textIncludes("[data-testid=events-status]", "Following 2 kinds after revision"), { timeout: 10_000 });
          const rev = await write("ADDED", "ConfigMap", "default/ev-cm-d", "POST", CMS, cm("ev-cm-d", { k: "1" }));
          await vp.waitForFunction(rowShown(rev), { timeout: 10_000 });
          assert.deepEqual(ours(await rowsOf(vp)), [written.at(-1)]);
          await shot(vp, "7-viewer-403");
          // Deployments of default are the viewer's to watch: "this namespace only" watches there, a new stream from the same revision.
          const r = await admin("POST", "/apis/rbac.authorization.k8s.io/v1/namespaces/default/roles", {
            apiVersion: "rbac.authorization.k8s.io/v1",
            kind: "Role",
            metadata: { name: "deploy-watcher" },
            rules: [{ apiGroups: ["apps"], resources: ["deployments"], verbs: ["get", "list", "watch"] }],
          });
          assert.equal(r.status, 201, r.text);
          const b = await admin("POST", "/apis/rbac.authorization.k8s.io/v1/namespaces/default/rolebindings", {
            apiVersion: "rbac.authorization.k8s.io/v1",
            kind: "RoleBinding",
            metadata: { name: "deploy-watcher" },
            roleRef: { apiGroup: "rbac.authorization.k8s.io", kind: "Role", name: "deploy-watcher" },
            subjects: [{ kind: "ServiceAccount", name: "cm-watcher", namespace: "default" }],
          });
          assert.equal(b.status, 201, b.text);
          for (let i = 0; (await http(c.httpUrl, viewer, "GET", "/apis/apps/v1/namespaces/default/deployments?limit=1")).status !== 200; i++) {
            assert.ok(i < 300, "the viewer may list deployments of default");
            await new Promise((res) => setTimeout(res, 100));
          }
          await vp.click("::-p-aria(this namespace only)");
          await vp.waitForFunction(textIncludes("[data-testid=events-status]", "in namespace default"), { timeout: 10_000 });
          await vp.waitForFunction(`!document.querySelector("[role=alert]")`, { timeout: 10_000 });
          const dep = await write("ADDED", "Deployment", "default/ev-scoped", "POST", DEPLOYS, {
            apiVersion: "apps/v1",
            kind: "Deployment",
            metadata: { name: "ev-scoped", namespace: "default" },
            spec: {
              selector: { matchLabels: { app: "ev-scoped" } },
              template: { metadata: { labels: { app: "ev-scoped" } }, spec: { containers: [{ name: "app", image: "busybox" }] } },
            },
          });
          await vp.waitForFunction(rowShown(dep), { timeout: 10_000 });
          // The same starting revision: ev-cm-d again, then the Deployment.
          assert.deepEqual(ours(await rowsOf(vp)), written.slice(-2));
          assert.match(vp.url(), /scope=namespace/);
          await shot(vp, "10-viewer-namespace-scoped");
        } finally {
          await ctx.close();
        }
      });
    });
  },
);
