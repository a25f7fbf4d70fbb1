// test-tier: servers
// The web view (/ui/) in a real browser: Debian's chromium, headless, driven
// by puppeteer-core, against a real cluster (api, scheduler, a hollow node
// agent process whose pods take 1.5 s to start). A person signs in, sees a
// pod created through the API appear in the grid, its cell turn from
// Pending to Running, and on its page its log lines arrive as written.
// Screenshots go to a kept temporary folder whose paths are printed.
import assert from "node:assert/strict";
import { mkdtempSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { after, before, describe, it } from "node:test";
import { waitFor } from "@choreo/kit/testing";
import { fromKubeJson } from "@choreo/kit/kube-json";
import type { Browser, Page } from "puppeteer-core";
import { CHROMIUM, launchChromium } from "./support/browser.js";
import { startCluster, withLogsOnFailure, type TestCluster } from "./support/cluster.js";
import { http } from "./support/http.js";

/** A page-side expression (this file is typed for Node, not the DOM): the text of `selector` as a person sees it includes `text`. */
function textIncludes(selector: string, text: string): string {
  return `(document.querySelector(${JSON.stringify(selector)})?.innerText ?? "").includes(${JSON.stringify(text)})`;
}

/** The background colour a person sees on the element matching `selector`. */
async function colourOf(page: Page, selector: string): Promise<string> {
  return (await page.evaluate(`getComputedStyle(document.querySelector(${JSON.stringify(selector)})).backgroundColor`)) as string;
}

describe(
  "the web view in a browser",
  { skip: CHROMIUM ? false : "chromium is not installed (apt-get install chromium; scripts/ensure-deps.sh --test)" },
  () => {
    let c: TestCluster;
    let browser: Browser;
    let page: Page;
    const shots = mkdtempSync(path.join(os.tmpdir(), "choreo-ui-shots-"));
    const shot = async (name: string) => {
      const file = path.join(shots, `${name}.png`);
      await page.screenshot({ path: file, fullPage: true });
      console.log(`screenshot: ${file}`);
    };

    before(async () => {
      c = await startCluster({
        actors: [
          { name: "scheduler" },
          { name: "node-agent", args: ["--hollow-nodes", "2", "--node-name-prefix", "ui-"], env: { CHOREO_HOLLOW_START_DELAY_MS: "1500" } },
        ],
      });
      await waitFor(async () => (await c.client.list("nodes", {})).items.length === 2, { timeoutMs: 30_000, message: "2 hollow nodes" });
      browser = await launchChromium();
      page = await browser.newPage();
    });
    after(async () => {
      await browser?.close();
      await c?.stop();
    });

    it("asks for a token, refuses a wrong one, then shows the nodes", async () => {
      await withLogsOnFailure(c, async () => {
        await page.goto(`${c.httpUrl}/ui/`);
        await page.waitForSelector("::-p-aria(Bearer token)");
        await page.type("::-p-aria(Bearer token)", "not-a-token");
        await page.click("::-p-aria(Sign in)");
        const alert = await page.waitForSelector("[role=alert]");
        assert.match((await alert!.evaluate((e) => e.textContent)) ?? "", /Sign-in failed/);
        await shot("1-sign-in-refused");
        await page.click("::-p-aria(Bearer token)", { count: 3 });
        await page.keyboard.press("Backspace");
        await page.type("::-p-aria(Bearer token)", c.token);
        await page.click("::-p-aria(Sign in)");
        await page.waitForSelector('section[aria-label="Node ui-0"]');
        await page.waitForSelector('section[aria-label="Node ui-1"]');
        await page.waitForFunction(textIncludes("[data-testid=summary]", "2 nodes (2 Ready)"), { timeout: 10_000 });
        assert.doesNotMatch((await page.evaluate("document.body.innerText")) as string, /Loading/);
        await shot("2-nodes");
      });
    });

    it("shows a pod created through the API within 2 s, Pending then Running, its colour changing", async () => {
      await withLogsOnFailure(c, async () => {
        const created = Date.now();
        await c.client.create(
          fromKubeJson({
            apiVersion: "v1",
            kind: "Pod",
            metadata: { name: "web-1", namespace: "default", annotations: { "hollow.choreo.dev/exit-after-ms": "8000" } },
            spec: { restartPolicy: "Never", containers: [{ name: "app", image: "busybox" }] },
          }),
        );
        const pending = 'a[aria-label="Pod default/web-1: Pending"]';
        await page.waitForSelector(pending, { timeout: 2_000 });
        const appeared = Date.now() - created;
        console.log(`pod in the grid ${appeared} ms after its create`);
        const pendingColour = await colourOf(page, pending);
        assert.equal(await page.$eval(pending, (e) => e.textContent), "P");
        await shot("3-pod-pending");
        const running = 'a[aria-label="Pod default/web-1: Running"]';
        await page.waitForSelector(running, { timeout: 10_000 });
        console.log(`Running in the grid ${Date.now() - created} ms after its create`);
        const runningColour = await colourOf(page, running);
        assert.equal(await page.$eval(running, (e) => e.textContent), "R");
        assert.notEqual(runningColour, pendingColour, "the cell's colour changes with the phase");
        // It sits in its node's row.
        const row = await page.$eval(running, (e) => e.closest("section")?.getAttribute("aria-label"));
        assert.match(row ?? "", /^Node ui-[01]$/);
        await shot("4-pod-running");
      });
    });

    it("opens the pod's page: its details, events and logs streaming", async () => {
      await withLogsOnFailure(c, async () => {
        await page.click('a[aria-label="Pod default/web-1: Running"]');
        await page.waitForSelector("::-p-aria(Pod details)");
        const title = await page.$eval("h1", (e) => e.textContent);
        assert.equal(title, "Pod default/web-1");
        assert.equal(await page.$eval('dd[data-field="Phase"]', (e) => e.textContent), "Running");
        assert.match((await page.$eval('dd[data-field="Node"]', (e) => e.textContent)) ?? "", /^ui-[01]$/);
        await page.waitForFunction(textIncludes("body", "Successfully assigned default/web-1"), { timeout: 10_000 });
        const log = "::-p-aria(Logs of container app)";
        await page.waitForFunction(textIncludes("[role=log]", "hollow container app started (run 0)"), { timeout: 10_000 });
        const first = await page.$eval(log, (e) => e.textContent ?? "");
        assert.doesNotMatch(first, /exited/);
        await shot("5-pod-detail");
        // The container exits 8 s after it started: that line arrives on the open stream, no reload.
        await page.waitForFunction(textIncludes("[role=log]", "hollow container app exited with code 0"), { timeout: 15_000 });
        await page.waitForFunction(textIncludes('dd[data-field="Phase"]', "Succeeded"), { timeout: 10_000 });
        await shot("6-pod-logs-streamed");
      });
    });

    it("authorizes the page's calls as the signed-in user: pods of default only", async () => {
      await withLogsOnFailure(c, async () => {
        const admin = (method: string, path: string, body: unknown) => http(c.httpUrl, c.token, method, path, body);
        assert.equal(
          (await admin("POST", "/api/v1/namespaces/default/serviceaccounts", { apiVersion: "v1", kind: "ServiceAccount", metadata: { name: "viewer" } }))
            .status,
          201,
        );
        // A Role of its own (the aggregated ClusterRole view is filled by the replication actor's aggregation, not run here).
        const role = await admin("POST", "/apis/rbac.authorization.k8s.io/v1/namespaces/default/roles", {
          apiVersion: "rbac.authorization.k8s.io/v1",
          kind: "Role",
          metadata: { name: "pod-viewer", namespace: "default" },
          rules: [{ apiGroups: [""], resources: ["pods", "pods/log", "events"], verbs: ["get", "list", "watch"] }],
        });
        assert.equal(role.status, 201, role.text);
        const rb = await admin("POST", "/apis/rbac.authorization.k8s.io/v1/namespaces/default/rolebindings", {
          apiVersion: "rbac.authorization.k8s.io/v1",
          kind: "RoleBinding",
          metadata: { name: "viewer-pods", namespace: "default" },
          roleRef: { apiGroup: "rbac.authorization.k8s.io", kind: "Role", name: "pod-viewer" },
          subjects: [{ kind: "ServiceAccount", name: "viewer", namespace: "default" }],
        });
        assert.equal(rb.status, 201, rb.text);
        const tr = await admin("POST", "/api/v1/namespaces/default/serviceaccounts/viewer/token", {
          apiVersion: "authentication.k8s.io/v1",
          kind: "TokenRequest",
          spec: {},
        });
        assert.equal(tr.status, 201, tr.text);
        const viewer = (tr.json["status"] as { token: string }).token;
        // The authorizer learns the binding from its watch.
        const bound = Date.now();
        await waitFor(async () => (await http(c.httpUrl, viewer, "GET", "/api/v1/namespaces/default/pods")).status === 200, {
          timeoutMs: 30_000,
          message: "the viewer may list pods in default",
        });
        console.log(`the viewer's binding effective ${Date.now() - bound} ms after its create`);
        await page.click("::-p-aria(Nodes and pods)");
        await page.click("::-p-aria(Sign out)");
        await page.waitForSelector("::-p-aria(Bearer token)");
        await page.type("::-p-aria(Bearer token)", viewer);
        await page.click("::-p-aria(Sign in)");
        // Nodes and pods of every namespace are not the viewer's to list: the grid says so.
        await page.waitForFunction(textIncludes("[role=alert]", "forbidden"), { timeout: 10_000 });
        await shot("9-viewer-grid-forbidden");
        // A pod of default is.
        await page.goto(`${c.httpUrl}/ui/#/pod/default/web-1`);
        await page.waitForFunction(textIncludes('dd[data-field="Phase"]', "Succeeded"), { timeout: 10_000 });
        await page.waitForFunction(textIncludes("[role=log]", "hollow container app started (run 0)"), { timeout: 10_000 });
        await shot("10-viewer-pod");
      });
    });

    it("goes on after the api is killed -9 and started again: the page relists and shows new pods", async () => {
      await withLogsOnFailure(c, async () => {
        await page.goto(`${c.httpUrl}/ui/#/`);
        await page.click("::-p-aria(Sign out)");
        await page.type("::-p-aria(Bearer token)", c.token);
        await page.click("::-p-aria(Sign in)");
        await page.waitForSelector('a[aria-label="Pod default/web-1: Succeeded"]');
        await c.killApi(0);
        await page.waitForSelector("[role=alert]", { timeout: 15_000 });
        assert.match((await page.evaluate(`document.querySelector("[role=alert]").innerText`)) as string, /Could not load: .* — retrying/);
        await shot("7-api-down");
        await c.startApi(0);
        const restarted = Date.now();
        await c.client.create(
          fromKubeJson({
            apiVersion: "v1",
            kind: "Pod",
            metadata: { name: "web-2", namespace: "default" },
            spec: { restartPolicy: "Never", containers: [{ name: "app", image: "busybox" }] },
          }),
        );
        await page.waitForSelector('a[aria-label="Pod default/web-2: Running"]', { timeout: 30_000 });
        console.log(`after the api's restart, the new pod Running in the grid ${Date.now() - restarted} ms later`);
        await page.waitForFunction(`!document.querySelector("[role=alert]")`, { timeout: 15_000 });
        await shot("8-api-back");
      });
    });

    it("lists workloads with their rollout", async () => {
      await withLogsOnFailure(c, async () => {
        await page.click("::-p-aria(Workloads)");
        await page.waitForSelector("::-p-aria(Workloads)[aria-current=page]");
        await page.waitForFunction(textIncludes("body", "Service endpoints"), { timeout: 10_000 });
        await page.waitForFunction(textIncludes("body", "No Deployments or ReplicationControllers."), { timeout: 10_000 });
        await shot("11-workloads");
      });
    });
  },
);
