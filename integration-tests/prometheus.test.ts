// test-tier: servers
// Prometheus (Debian's binary, /usr/bin/prometheus) scraping a whole cluster:
// the api's gateway /metrics with a bearer token (RBAC: a non-resource URL)
// and every actor's metrics server — every target up, a non-empty api latency
// histogram, the recording rules of infra/prometheus/rules.yml (API p99, pod
// startup p99) evaluated; each actor's /readyz?verbose names its checks.
// Skipped when /usr/bin/prometheus is missing (apt-get install prometheus).
import assert from "node:assert/strict";
import { existsSync, writeFileSync } from "node:fs";
import path from "node:path";
import { after, before, describe, it } from "node:test";
import { unwrap } from "@choreo/kit";
import type { Pod } from "@choreo/kit/gen/choreo/core/v1/core";
import { fromKubeJson } from "@choreo/kit/kube-json";
import { freePort, startProcess, waitFor, type ManagedProcess } from "@choreo/kit/testing";
import { startCluster, type TestCluster } from "./support/cluster.js";
import { run, writeKubeconfig } from "./support/kubectl.js";

const PROMETHEUS = "/usr/bin/prometheus";
const RULES = path.resolve(import.meta.dirname, "../infra/prometheus/rules.yml");
const ACTORS = ["scheduler", "replication", "endpoints", "node-agent"] as const;
const PODS = 6;

interface PromVector {
  status: string;
  data: { result: { metric: Record<string, string>; value: [number, string] }[] };
}

describe("prometheus scrapes every process", { skip: existsSync(PROMETHEUS) ? false : `${PROMETHEUS} missing (apt-get install prometheus)` }, () => {
  let c: TestCluster;
  let prom: ManagedProcess | undefined;
  let promUrl = "";
  const ports: Record<string, number> = {};
  const query = async (q: string): Promise<PromVector["data"]["result"]> => {
    const r = (await (await fetch(`${promUrl}/api/v1/query?query=${encodeURIComponent(q)}`)).json()) as PromVector;
    return r.data.result;
  };

  before(async () => {
    for (const a of ACTORS) ports[a] = await freePort();
    c = await startCluster({
      actors: [
        { name: "node-agent", env: { CHOREO_HOLLOW_NODES: "2", CHOREO_METRICS_PORT: String(ports["node-agent"]) } },
        { name: "scheduler", env: { CHOREO_METRICS_PORT: String(ports["scheduler"]) } },
        { name: "replication", env: { CHOREO_METRICS_PORT: String(ports["replication"]) } },
        { name: "endpoints", env: { CHOREO_METRICS_PORT: String(ports["endpoints"]) } },
      ],
    });
    const tokenFile = path.join(c.dir, "prometheus.token");
    writeFileSync(tokenFile, c.token, { mode: 0o600 });
    const promPort = await freePort();
    promUrl = `http://127.0.0.1:${promPort}`;
    const config = path.join(c.dir, "prometheus.yml");
    // JSON is YAML: the config written as an object.
    const job = (name: string, port: number) => ({ job_name: name, static_configs: [{ targets: [`127.0.0.1:${port}`] }] });
    writeFileSync(
      config,
      JSON.stringify({
        global: { scrape_interval: "1s", evaluation_interval: "1s" },
        rule_files: [RULES],
        scrape_configs: [
          { ...job("api", Number(new URL(c.httpUrl).port)), authorization: { credentials_file: tokenFile } },
          ...ACTORS.map((a) => job(a, ports[a] ?? 0)),
        ],
      }),
    );
    prom = await startProcess({
      name: "prometheus",
      cmd: PROMETHEUS,
      args: [`--config.file=${config}`, `--storage.tsdb.path=${path.join(c.dir, "prometheus-data")}`, `--web.listen-address=127.0.0.1:${promPort}`],
      readyUrl: `${promUrl}/-/ready`,
      timeoutMs: 60_000,
      logFile: path.join(c.dir, "prometheus.log"),
    });
  });
  after(async () => {
    await prom?.stop(10_000);
    await c?.stop();
  });

  it("every target up; the api latency histogram non-empty; API p99 and pod startup p99 recorded", async () => {
    // Scraped once before the pods start: a rate needs the histogram's samples from before their observations.
    await waitFor(async () => (await query("up")).length === 5 && (await query("up")).every((s) => s.value[1] === "1"), {
      timeoutMs: 30_000,
      message: `every target up: ${JSON.stringify(await query("up").catch(() => []))}`,
    });
    for (let i = 0; i < PODS; i++)
      await c.client.create(
        fromKubeJson({
          apiVersion: "v1",
          kind: "Pod",
          metadata: { name: `m-${i}`, namespace: "default" },
          spec: { containers: [{ name: "app", image: "nginx" }] },
        }),
      );
    await waitFor(
      async () => (await c.client.list("pods", { namespace: "default" })).items.filter((o) => (unwrap(o) as Pod).status?.phase === "Running").length === PODS,
      { timeoutMs: 60_000, message: `${PODS} pods Running` },
    );
    // kubectl-like traffic through the gateway (the NATS door is counted elsewhere).
    for (let i = 0; i < 5; i++) {
      const r = await fetch(`${c.httpUrl}/api/v1/namespaces/default/pods`, { headers: { authorization: `Bearer ${c.token}` } });
      assert.equal(r.status, 200);
      await r.text();
    }
    const latency = await query('sum(choreo_api_http_request_duration_seconds_count{job="api"})');
    assert.ok(Number(latency[0]?.value[1]) > 0, "api latency histogram has observations");
    await waitFor(async () => (await query("choreo:api_request_latency_seconds:p99")).some((s) => Number.isFinite(Number(s.value[1]))), {
      timeoutMs: 30_000,
      message: "API p99 recorded",
    });
    await waitFor(async () => (await query("choreo:pod_startup_latency_seconds:p99")).some((s) => Number.isFinite(Number(s.value[1]))), {
      timeoutMs: 30_000,
      message: `pod startup p99 recorded: ${JSON.stringify(await query("choreo_pod_startup_latency_seconds_count").catch(() => []))} ${JSON.stringify(await query("kubelet_pod_start_duration_seconds_count").catch(() => []))}`,
    });
    const started = await query('sum(kubelet_pod_start_duration_seconds_count{job="node-agent"})');
    assert.equal(Number(started[0]?.value[1]), PODS, "each pod's start observed once");
    // Each job is scraped on its own schedule: the scheduler's last scrape may predate the node agent's.
    await waitFor(
      async () => Number((await query('sum(scheduler_scheduling_attempt_duration_seconds_count{job="scheduler",result="scheduled"})'))[0]?.value[1]) >= PODS,
      { timeoutMs: 30_000, message: "scheduling attempts timed" },
    );
    assert.ok((await query('workqueue_adds_total{job="replication"}')).length > 0, "replication's work queues export their metrics");
    const p99 = (await query("choreo:api_request_latency_seconds:p99"))[0]?.value[1];
    const startup = (await query("choreo:pod_startup_latency_seconds:p99"))[0]?.value[1];
    console.log(`# API p99 ${p99} s, pod startup p99 ${startup} s (recording rules)`);
  });

  it("the api's watchers gauge follows an open watch; store latency and relay lag are exported", async () => {
    const scrape = async () => {
      const r = await fetch(`${c.httpUrl}/metrics`, { headers: { authorization: `Bearer ${c.token}` } });
      assert.equal(r.status, 200);
      return r.text();
    };
    const watchers = async () => Number(/choreo_api_registered_watchers\{[^}]*resource="configmaps"[^}]*\} (\d+)/.exec(await scrape())?.[1] ?? 0);
    const before = await watchers();
    const ac = new AbortController();
    const res = await fetch(`${c.httpUrl}/api/v1/namespaces/default/configmaps?watch=1`, {
      headers: { authorization: `Bearer ${c.token}` },
      signal: ac.signal,
    });
    assert.equal(res.status, 200);
    await waitFor(async () => (await watchers()) === before + 1, { timeoutMs: 5_000, message: "watchers +1" });
    ac.abort();
    await res.body?.cancel().catch(() => undefined);
    await waitFor(async () => (await watchers()) === before, { timeoutMs: 5_000, message: "watchers back" });
    const text = await scrape();
    assert.match(text, /choreo_api_store_request_duration_seconds_count\{[^}]*operation="create",resource="pods"[^}]*\} [1-9]/);
    assert.match(text, /choreo_relay_lag_seconds\{service="api"\} \d/);
  });

  it("kubectl get --raw /metrics and /livez?verbose answer (issue 17: /metrics was a 404)", async () => {
    const kc = writeKubeconfig(c);
    const metrics = await run("/usr/bin/kubectl", ["get", "--raw", "/metrics"], kc);
    assert.equal(metrics.code, 0, metrics.stderr);
    assert.match(metrics.stdout, /choreo_api_http_request_duration_seconds_bucket\{/);
    const livez = await run("/usr/bin/kubectl", ["get", "--raw", "/livez?verbose"], kc);
    assert.equal(livez.stdout, "[+]ping ok\n[+]event-loop ok\nlivez check passed\n");
  });

  it("each actor's /readyz?verbose names its checks and passes", async () => {
    for (const a of ACTORS) {
      const r = await fetch(`http://127.0.0.1:${ports[a]}/readyz?verbose`);
      const body = await r.text();
      assert.equal(r.status, 200, `${a}: ${body}`);
      assert.match(body, /\[\+\]bus ok\n\[\+\]informers-synced ok\n/, a);
      assert.match(await (await fetch(`http://127.0.0.1:${ports[a]}/livez?verbose`)).text(), /\[\+\]event-loop ok/, a);
    }
  });
});
