import assert from "node:assert/strict";
import { before, describe, it } from "node:test";
import { isNotFound } from "@choreo/kit";
import { fromKubeJson, toKubeJson } from "@choreo/kit/kube-json";
import { rejects } from "../../testing/api-assert.js";
import { startMemoryRegistry, type MemoryRegistry } from "../../testing/memory-registry.js";

const template = { spec: { template: { spec: { restartPolicy: "OnFailure", containers: [{ name: "c", image: "busybox" }] } } } };
const cronJob = (name: string, spec: Record<string, unknown>) =>
  fromKubeJson({
    apiVersion: "batch/v1",
    kind: "CronJob",
    metadata: { name, namespace: "default" },
    spec: { schedule: "*/1 * * * *", jobTemplate: template, ...spec },
  });

describe("cronjobs", () => {
  // On the in-memory storage: defaults and validation are the strategy's.
  let s: MemoryRegistry;
  before(async () => {
    s = await startMemoryRegistry();
  });

  async function stored(name: string): Promise<boolean> {
    try {
      await s.client.get("cronjobs", "default", name);
      return true;
    } catch (err) {
      if (isNotFound(err)) return false;
      throw err;
    }
  }

  it("fills Kubernetes' defaults", async () => {
    await s.client.create(cronJob("defaults", {}));
    const spec = toKubeJson(await s.client.get("cronjobs", "default", "defaults"))["spec"] as Record<string, unknown>;
    assert.equal(spec["concurrencyPolicy"], "Allow");
    assert.equal(spec["suspend"], false);
    assert.equal(spec["successfulJobsHistoryLimit"], 3);
    assert.equal(spec["failedJobsHistoryLimit"], 1);
    assert.equal(spec["timeZone"], undefined);
    const podSpec = (((spec["jobTemplate"] as Record<string, unknown>)["spec"] as Record<string, unknown>)["template"] as Record<string, unknown>)[
      "spec"
    ] as Record<string, unknown>;
    assert.equal(podSpec["restartPolicy"], "OnFailure");
    assert.equal(podSpec["dnsPolicy"], "ClusterFirst");
    assert.equal(podSpec["terminationGracePeriodSeconds"], 30);
  });

  it("accepts names, steps, lists, descriptors and an IANA time zone", async () => {
    for (const [i, schedule] of ["0 9 * * MON-FRI", "*/5 1,13 1-15 JAN,jul *", "@hourly", "@daily", "@every 1h30m"].entries())
      await s.client.create(cronJob(`ok-${i}`, { schedule, timeZone: "Europe/Berlin" }));
  });

  it("refuses an invalid schedule with 422 on spec.schedule and stores nothing", async () => {
    await rejects(
      s.client.create(cronJob("bad-schedule", { schedule: "61 * * * *" })),
      422,
      "Invalid",
      /^CronJob(?:\.batch)? "bad-schedule" is invalid: spec\.schedule: Invalid value: "61 \* \* \* \*": end of range \(61\) above maximum \(59\): 61$/,
    );
    assert.equal(await stored("bad-schedule"), false);
    await rejects(
      s.client.create(cronJob("four-fields", { schedule: "* * * *" })),
      422,
      "Invalid",
      /spec\.schedule: Invalid value: "\* \* \* \*": expected exactly 5 fields, found 4: \[\* \* \* \*\]/,
    );
    await rejects(
      s.client.create(cronJob("descriptor", { schedule: "@fortnightly" })),
      422,
      "Invalid",
      /spec\.schedule: .*unrecognized descriptor: @fortnightly/,
    );
    await rejects(
      s.client.create(cronJob("tz", { schedule: "TZ=UTC * * * * *" })),
      422,
      "Invalid",
      /spec\.schedule: Invalid value: "TZ=UTC \* \* \* \* \*": cannot use TZ or CRON_TZ in schedule, use timeZone field instead/,
    );
    await rejects(s.client.create(cronJob("empty", { schedule: "" })), 422, "Invalid", /spec\.schedule: Required value/);
    for (const n of ["four-fields", "descriptor", "tz", "empty"]) assert.equal(await stored(n), false, n);
  });

  it("refuses an unknown time zone with 422 on spec.timeZone and stores nothing", async () => {
    await rejects(
      s.client.create(cronJob("bad-zone", { timeZone: "Mars/Olympus" })),
      422,
      "Invalid",
      /^CronJob(?:\.batch)? "bad-zone" is invalid: spec\.timeZone: Invalid value: "Mars\/Olympus": unknown time zone Mars\/Olympus$/,
    );
    await rejects(s.client.create(cronJob("local-zone", { timeZone: "Local" })), 422, "Invalid", /spec\.timeZone: .*must be an explicit time zone/);
    assert.equal(await stored("bad-zone"), false);
    assert.equal(await stored("local-zone"), false);
  });

  it("refuses a bad concurrencyPolicy, negative limits, a long name and a job template a Job would refuse", async () => {
    await rejects(
      s.client.create(cronJob("bad-policy", { concurrencyPolicy: "Sometimes" })),
      422,
      "Invalid",
      /spec\.concurrencyPolicy: Unsupported value: "Sometimes": supported values: "Allow", "Forbid", "Replace"/,
    );
    await rejects(
      s.client.create(cronJob("negative", { startingDeadlineSeconds: -1, successfulJobsHistoryLimit: -2 })),
      422,
      "Invalid",
      /spec\.startingDeadlineSeconds: Invalid value: -1: must be greater than or equal to 0, spec\.successfulJobsHistoryLimit: Invalid value: -2/,
    );
    const long = "x".repeat(53);
    await rejects(s.client.create(cronJob(long, {})), 422, "Invalid", /metadata\.name: Invalid value: "x{53}": must be no more than 52 characters/);
    await s.client.create(cronJob("x".repeat(52), {}));
    await rejects(
      s.client.create(
        cronJob("always", { jobTemplate: { spec: { template: { spec: { restartPolicy: "Always", containers: [{ name: "c", image: "i" }] } } } } }),
      ),
      422,
      "Invalid",
      /spec\.jobTemplate\.spec\.template\.spec\.restartPolicy: Unsupported value: "Always": supported values: "OnFailure", "Never"/,
    );
    await rejects(
      s.client.create(cronJob("no-containers", { jobTemplate: { spec: { template: { spec: { restartPolicy: "Never" } } } } })),
      422,
      "Invalid",
      /spec\.jobTemplate\.spec\.template\.spec\.containers: Required value/,
    );
    for (const n of ["bad-policy", "negative", long, "always", "no-containers"]) assert.equal(await stored(n), false, n);
  });

  it("an update is validated as a create (a broken schedule is refused, the stored one stays)", async () => {
    await s.client.create(cronJob("update-me", {}));
    const got = toKubeJson(await s.client.get("cronjobs", "default", "update-me"));
    const spec = got["spec"] as Record<string, unknown>;
    await rejects(s.client.update(fromKubeJson({ ...got, spec: { ...spec, schedule: "0 0 30 2 * *" } })), 422, "Invalid", /spec\.schedule/);
    assert.equal((toKubeJson(await s.client.get("cronjobs", "default", "update-me"))["spec"] as Record<string, unknown>)["schedule"], "*/1 * * * *");
  });
});
