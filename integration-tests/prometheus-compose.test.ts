// test-tier: servers
// The monitoring compose profile: scripts/compose-up.sh (images built
// offline), then `docker-compose --profile monitoring up -d prometheus` —
// every target up (api, scheduler, replication, endpoints, both node agents),
// a non-empty API latency histogram and the API p99 recording rule; then
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
  data: { activeTargets: { labels: Record<string, string>; health: string; lastError: string }[] };
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
