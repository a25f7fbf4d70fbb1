// test-tier: servers
// The monitoring compose profile: scripts/compose-up.sh (images built
// offline), then `docker-compose --profile monitoring up -d prometheus` —
// every target up (api, scheduler, replication, endpoints, both node agents),
// the api's scraped on its gateway (https://api:6443/metrics) with
// Prometheus's own token while an anonymous scrape is refused (401/403) and
// the plain metrics port is closed to the network, a non-empty API latency
// histogram and the API p99 recording rule; then
// compose-down.sh with the profile leaves no container or volume of the
// project. Skipped without a Docker engine or docker-compose. Runs node
// agents on the host network as compose.test.ts does: not at the same time.
import assert from "node:assert/strict";
import { execFile } from "node:child_process";
import { after, before, describe, it } from "node:test";
import { promisify } from "node:util";
import { freePort, waitFor } from "@choreo/kit/testing";
import { composeSkipReason, script } from "./support/compose.js";

const exec = promisify(execFile);

const skip = await composeSkipReason();

interface Targets {
  data: { activeTargets: { labels: Record<string, string>; scrapeUrl: string; health: string; lastError: string }[] };
}

describe("the monitoring compose profile", { skip, timeout: 25 * 60_000 }, () => {
  const project = `choreomon${process.pid}`;
  let env: Record<string, string> = {};
  let prom = "";
  before(
    async () => {
      env = {
        COMPOSE_PROJECT_NAME: project,
        COMPOSE_PROFILES: "monitoring",
        CHOREO_COMPOSE_HTTPS_PORT: String(await freePort()),
        CHOREO_COMPOSE_HTTP_PORT: String(await freePort()),
        CHOREO_COMPOSE_NATS_PORT: String(await freePort()),
        CHOREO_COMPOSE_PROMETHEUS_PORT: String(await freePort()),
      };
      prom = `http://127.0.0.1:${env["CHOREO_COMPOSE_PROMETHEUS_PORT"]}`;
      await script("bash", ["infra/images/build.sh", "prometheus"], env, 15 * 60_000);
      await script("bash", ["scripts/compose-up.sh"], env, 15 * 60_000);
    },
    { timeout: 20 * 60_000 },
  );
  after(async () => {
    await script("bash", ["scripts/compose-down.sh"], env).catch(() => undefined);
  });

  it("Prometheus sees every target up, a non-empty API latency histogram and the API p99; down leaves nothing", async () => {
    await script("docker-compose", ["up", "-d", "--no-build", "prometheus"], env);
    const targets = async () => ((await (await fetch(`${prom}/api/v1/targets`)).json()) as Targets).data.activeTargets;
    await waitFor(async () => (await targets().catch(() => [])).length === 6 && (await targets()).every((t) => t.health === "up"), {
      timeoutMs: 90_000,
      intervalMs: 1_000,
      message: `every target up: ${JSON.stringify(await targets().catch(() => []))}`,
    });
    const jobs = (await targets()).map((t) => t.labels["job"]).sort();
    assert.deepEqual(jobs, ["api", "endpoints", "node-agent", "node-agent", "replication", "scheduler"]);
    // The api's target is its gateway over https, up with the token (a refused scrape would make it down: lastError 401/403).
    const api = (await targets()).find((t) => t.labels["job"] === "api");
    assert.equal(api?.scrapeUrl, "https://api:6443/metrics");
    assert.equal(api?.health, "up", api?.lastError);
    // Without a token the same /metrics is refused (the gateway's http port on the host: same authentication as https).
    const metricsUrl = `http://127.0.0.1:${env["CHOREO_COMPOSE_HTTP_PORT"]}/metrics`;
    const anonymous = await fetch(metricsUrl);
    assert.ok([401, 403].includes(anonymous.status), `an anonymous scrape answers ${anonymous.status}`);
    // With Prometheus's token (its identity volume): the api's registry, so the token is what admits the scrape.
    const token = (await script("docker-compose", ["exec", "-T", "prometheus", "cat", "/run/choreo/identity/token"], env)).trim();
    const scraped = await fetch(metricsUrl, { headers: { authorization: `Bearer ${token}` } });
    assert.equal(scraped.status, 200);
    assert.match(await scraped.text(), /^choreo_api_http_request_duration_seconds_bucket\{/m);
    // The token is system:monitoring only: no resource read.
    const pods = await fetch(`http://127.0.0.1:${env["CHOREO_COMPOSE_HTTP_PORT"]}/api/v1/pods`, { headers: { authorization: `Bearer ${token}` } });
    assert.equal(pods.status, 403);
    // And the api's plain metrics port is not on the compose network (loopback only): no way around the token.
    const plain = await script(
      "docker-compose",
      ["exec", "-T", "scheduler", "node", "-e", "fetch('http://api:9100/metrics').then((r) => console.log(r.status), () => console.log('refused'))"],
      env,
    );
    assert.equal(plain.trim(), "refused");
    const query = async (q: string) =>
      ((await (await fetch(`${prom}/api/v1/query?query=${encodeURIComponent(q)}`)).json()) as { data: { result: { value: [number, string] }[] } }).data.result;
    await waitFor(async () => Number((await query("sum(choreo_api_http_request_duration_seconds_count)"))[0]?.value[1] ?? 0) > 0, {
      timeoutMs: 60_000,
      message: "the api latency histogram has observations",
    });
    await waitFor(async () => (await query("choreo:api_request_latency_seconds:p99")).length > 0, { timeoutMs: 60_000, message: "API p99 recorded" });
    await script("bash", ["scripts/compose-down.sh"], env);
    const left = await exec("docker", ["ps", "-aq", "--filter", `label=com.docker.compose.project=${project}`]);
    assert.equal(left.stdout.trim(), "", "no container of the project left");
    const volumes = await exec("docker", ["volume", "ls", "-q", "--filter", `label=com.docker.compose.project=${project}`]);
    assert.equal(volumes.stdout.trim(), "", "no volume of the project left");
  });
});
