import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { alreadyExists, unwrap } from "@choreo/kit";
import { parseCronSchedule } from "@choreo/kit/apimachinery";
import type { CronJob, Job } from "@choreo/kit/gen/choreo/batch/v1/batch";
import { fromKubeJson } from "@choreo/kit/kube-json";
import { silentLogger } from "@choreo/kit/log";
import { FakeCache, RecordingClient } from "../testing.js";
import { CronJobController, SCHEDULED_TIMESTAMP_ANNOTATION } from "./cronjob-controller.js";
import { jobName, mostRecentScheduleTime, nextScheduleDelay, rfc1123z, rfc3339In } from "./schedule.js";

const at = (iso: string): number => Date.parse(iso);

function cronJob(spec: Record<string, unknown> = {}, status: Record<string, unknown> = {}): CronJob {
  return unwrap(
    fromKubeJson({
      apiVersion: "batch/v1",
      kind: "CronJob",
      metadata: { name: "tick", namespace: "default", uid: "uid-tick", creationTimestamp: "2026-11-25T10:00:30Z", resourceVersion: "5" },
      spec: {
        schedule: "*/1 * * * *",
        timeZone: "UTC",
        concurrencyPolicy: "Allow",
        suspend: false,
        successfulJobsHistoryLimit: 3,
        failedJobsHistoryLimit: 1,
        jobTemplate: {
          metadata: { labels: { team: "a" } },
          spec: { template: { spec: { restartPolicy: "OnFailure", containers: [{ name: "c", image: "busybox" }] } } },
        },
        ...spec,
      },
      status,
    }),
  ) as CronJob;
}

/** A Job of the CronJob: `finished` Complete / Failed at `ended`, else running. */
function job(name: string, o: { finished?: "Complete" | "Failed"; started?: string; ended?: string } = {}): Job {
  const conditions = o.finished ? [{ type: o.finished, status: "True" }] : [];
  return unwrap(
    fromKubeJson({
      apiVersion: "batch/v1",
      kind: "Job",
      metadata: {
        name,
        namespace: "default",
        uid: `uid-${name}`,
        resourceVersion: "9",
        ownerReferences: [{ apiVersion: "batch/v1", kind: "CronJob", name: "tick", uid: "uid-tick", controller: true, blockOwnerDeletion: true }],
      },
      spec: { template: { spec: { restartPolicy: "OnFailure", containers: [{ name: "c", image: "busybox" }] } } },
      status: {
        conditions,
        ...(o.started ? { startTime: o.started } : {}),
        ...(o.finished === "Complete" && o.ended ? { completionTime: o.ended } : {}),
      },
    }),
  ) as Job;
}

const activeRef = (name: string) => ({ kind: "Job", apiVersion: "batch/v1", namespace: "default", name, uid: `uid-${name}` });

function setup(cj: CronJob, jobs: Job[], now: string) {
  const cronjobs = new FakeCache<CronJob>();
  const jobCache = new FakeCache<Job>();
  const client = new RecordingClient();
  const events: string[] = [];
  let clock = at(now);
  const c = new CronJobController({
    client,
    cronjobs,
    jobs: jobCache,
    log: silentLogger(),
    now: () => clock,
    recorder: { emit: (_r, type, reason, msg) => events.push(`${type} ${reason} ${msg}`) },
  });
  cronjobs.put(cj);
  for (const j of jobs) {
    jobCache.put(j);
    client.objects.set(`jobs/default/${j.metadata!.name}`, { kind: { $case: "job", value: j } });
  }
  const status = () => {
    const w = client.of("updateStatus").at(-1);
    return w?.object.kind?.$case === "cronJob" ? w.object.kind.value.status : undefined;
  };
  return { c, client, events, status, setNow: (iso: string) => (clock = at(iso)) };
}

describe("schedule times", () => {
  const every = parseCronSchedule("*/1 * * * *", "UTC");
  it("nothing due before the first time; the most recent one after; the wait until the next", () => {
    const cj = cronJob();
    assert.equal(mostRecentScheduleTime(cj, at("2026-11-25T10:00:50Z"), every, true).mostRecent, undefined);
    assert.equal(nextScheduleDelay(cj, at("2026-11-25T10:00:50Z"), every), 10_100);
    const r = mostRecentScheduleTime(cj, at("2026-11-25T10:05:10Z"), every, true);
    assert.equal(r.mostRecent, at("2026-11-25T10:05:00Z"));
    assert.equal(r.missed, "few");
    assert.equal(nextScheduleDelay(cronJob({}, { lastScheduleTime: "2026-11-25T10:05:00Z" }), at("2026-11-25T10:05:10Z"), every), 50_100);
  });
  it("counts more than 100 missed times as many; an impossible schedule is an error", () => {
    const r = mostRecentScheduleTime(cronJob(), at("2026-11-25T12:00:10Z"), every, true);
    assert.equal(r.missed, "many");
    assert.equal(r.mostRecent, at("2026-11-25T12:00:00Z"));
    assert.throws(() => mostRecentScheduleTime(cronJob(), at("2026-11-25T12:00:10Z"), parseCronSchedule("0 0 30 2 *", "UTC"), true), /less than 1 second/);
  });
  it("names, annotations and event times as Kubernetes prints them", () => {
    assert.equal(jobName("tick", at("2026-11-25T10:01:00Z")), `tick-${at("2026-11-25T10:01:00Z") / 60_000}`);
    assert.equal(rfc3339In(at("2026-11-25T10:01:00Z"), "Europe/Berlin"), "2026-11-25T11:01:00+01:00");
    assert.equal(rfc3339In(at("2026-11-25T10:01:00Z"), "America/New_York"), "2026-11-25T05:01:00-05:00");
    assert.equal(rfc3339In(at("2026-11-25T10:01:00Z"), "UTC"), "2026-11-25T10:01:00Z");
    assert.equal(rfc1123z(at("2026-11-25T10:01:00Z")), "Wed, 25 Nov 2026 10:01:00 +0000");
  });
});

describe("CronJobController", () => {
  it("waits for the first schedule time, then creates its Job with the owner, the annotation and the template's labels", async () => {
    const t = setup(cronJob(), [], "2026-11-25T10:00:40Z");
    assert.deepEqual(await t.c.reconcile("default/tick"), { requeueAfterMs: 20_100 });
    assert.equal(t.client.of("create").length, 0);

    t.setNow("2026-11-25T10:01:00.200Z");
    const r = await t.c.reconcile("default/tick");
    const created = t.client.of("create");
    assert.equal(created.length, 1);
    const j = unwrap(created[0]!.object) as Job;
    const name = jobName("tick", at("2026-11-25T10:01:00Z"));
    assert.equal(j.metadata?.name, name);
    assert.equal(j.metadata?.annotations[SCHEDULED_TIMESTAMP_ANNOTATION], "2026-11-25T10:01:00Z");
    assert.deepEqual(j.metadata?.labels, { team: "a" });
    assert.deepEqual(
      j.metadata?.ownerReferences.map((o) => [o.kind, o.name, o.uid, o.controller]),
      [["CronJob", "tick", "uid-tick", true]],
    );
    assert.equal(j.spec?.template?.spec?.containers[0]?.image, "busybox");
    assert.equal(t.status()?.lastScheduleTime, "2026-11-25T10:01:00Z");
    assert.deepEqual(
      t.status()?.active.map((a) => a.name),
      [name],
    );
    assert.deepEqual(r, { requeueAfterMs: 59_900 });
    assert.deepEqual(t.events, [`Normal SuccessfulCreate Created job ${name}`]);
  });

  it("Forbid: skips a run while a Job is still active", async () => {
    const cj = cronJob({ concurrencyPolicy: "Forbid" }, { lastScheduleTime: "2026-11-25T10:01:00Z", active: [activeRef("tick-1")] });
    const t = setup(cj, [job("tick-1", { started: "2026-11-25T10:01:00Z" })], "2026-11-25T10:02:01Z");
    await t.c.reconcile("default/tick");
    assert.equal(t.client.of("create").length, 0);
    assert.equal(t.client.of("delete").length, 0);
    assert.deepEqual(t.events, ["Normal JobAlreadyActive Not starting job because prior execution is running and concurrency policy is Forbid"]);
  });

  it("Allow: runs beside the active Job", async () => {
    const cj = cronJob({}, { lastScheduleTime: "2026-11-25T10:01:00Z", active: [activeRef("tick-1")] });
    const t = setup(cj, [job("tick-1", { started: "2026-11-25T10:01:00Z" })], "2026-11-25T10:02:01Z");
    await t.c.reconcile("default/tick");
    assert.equal(t.client.of("create").length, 1);
    assert.equal(t.status()?.active.length, 2);
  });

  it("Replace: deletes the active Job (Background) and creates the new one", async () => {
    const cj = cronJob({ concurrencyPolicy: "Replace" }, { lastScheduleTime: "2026-11-25T10:01:00Z", active: [activeRef("tick-1")] });
    const t = setup(cj, [job("tick-1", { started: "2026-11-25T10:01:00Z" })], "2026-11-25T10:02:01Z");
    await t.c.reconcile("default/tick");
    const del = t.client.of("delete");
    assert.deepEqual(
      del.map((d) => [d.resource, d.name, d.options?.propagationPolicy]),
      [["jobs", "tick-1", "Background"]],
    );
    assert.equal(t.client.of("create").length, 1);
    assert.deepEqual(
      t.status()?.active.map((a) => a.name),
      [jobName("tick", at("2026-11-25T10:02:00Z"))],
    );
    assert.deepEqual(t.events, [
      "Normal SuccessfulDelete Deleted job tick-1",
      `Normal SuccessfulCreate Created job ${jobName("tick", at("2026-11-25T10:02:00Z"))}`,
    ]);
  });

  it("a finished Job leaves status.active and sets lastSuccessfulTime", async () => {
    const cj = cronJob({}, { lastScheduleTime: "2026-11-25T10:01:00Z", active: [activeRef("tick-1")] });
    const t = setup(cj, [job("tick-1", { finished: "Complete", started: "2026-11-25T10:01:00Z", ended: "2026-11-25T10:01:20Z" })], "2026-11-25T10:01:30Z");
    await t.c.reconcile("default/tick");
    assert.deepEqual(t.status()?.active, []);
    assert.equal(t.status()?.lastSuccessfulTime, "2026-11-25T10:01:20Z");
    assert.deepEqual(t.events, ["Normal SawCompletedJob Saw completed job: tick-1, condition: Complete"]);
  });

  it("history limits delete the oldest finished Jobs beyond them", async () => {
    const jobs = [
      job("ok-1", { finished: "Complete", started: "2026-11-25T09:01:00Z", ended: "2026-11-25T09:01:10Z" }),
      job("ok-4", { finished: "Complete", started: "2026-11-25T09:04:00Z", ended: "2026-11-25T09:04:10Z" }),
      job("ok-2", { finished: "Complete", started: "2026-11-25T09:02:00Z", ended: "2026-11-25T09:02:10Z" }),
      job("ok-5", { finished: "Complete", started: "2026-11-25T09:05:00Z", ended: "2026-11-25T09:05:10Z" }),
      job("ok-3", { finished: "Complete", started: "2026-11-25T09:03:00Z", ended: "2026-11-25T09:03:10Z" }),
      job("bad-1", { finished: "Failed", started: "2026-11-25T09:06:00Z" }),
      job("bad-2", { finished: "Failed", started: "2026-11-25T09:07:00Z" }),
      job("running", { started: "2026-11-25T09:08:00Z" }),
    ];
    const cj = cronJob({ suspend: true }, { lastScheduleTime: "2026-11-25T09:08:00Z", active: [activeRef("running")] });
    const t = setup(cj, jobs, "2026-11-25T09:08:30Z");
    await t.c.reconcile("default/tick");
    assert.deepEqual(
      t.client
        .of("delete")
        .map((d) => d.name)
        .sort(),
      ["bad-1", "ok-1", "ok-2"],
    );
    assert.ok(t.client.of("delete").every((d) => d.options?.propagationPolicy === "Background"));
    assert.equal(t.client.of("create").length, 0, "suspended: nothing new");
    assert.equal(t.status()?.lastSuccessfulTime, "2026-11-25T09:05:10Z");
  });

  it("startingDeadlineSeconds: a time missed by more than the deadline is skipped with MissSchedule", async () => {
    const cj = cronJob({ startingDeadlineSeconds: 10 }, { lastScheduleTime: "2026-11-25T10:01:00Z" });
    const t = setup(cj, [], "2026-11-25T10:02:30Z");
    const r = await t.c.reconcile("default/tick");
    assert.equal(t.client.of("create").length, 0);
    assert.deepEqual(t.events, ["Warning MissSchedule Missed scheduled time to start a job: Wed, 25 Nov 2026 10:02:00 +0000"]);
    assert.deepEqual(r, { requeueAfterMs: 30_100 });
    // Within the deadline it runs.
    t.setNow("2026-11-25T10:03:05Z");
    await t.c.reconcile("default/tick");
    assert.equal(t.client.of("create").length, 1);
  });

  it("after a restart between create and status write: AlreadyExists adopts its own Job, no second one", async () => {
    const name = jobName("tick", at("2026-11-25T10:01:00Z"));
    const t = setup(cronJob(), [], "2026-11-25T10:01:03Z");
    t.client.objects.set(`jobs/default/${name}`, { kind: { $case: "job", value: job(name) } });
    t.client.fail.create = alreadyExists("jobs", name, "batch");
    await t.c.reconcile("default/tick");
    assert.equal(t.client.of("create").length, 1, "tried once");
    assert.deepEqual(
      t.status()?.active.map((a) => a.name),
      [name],
    );
    assert.equal(t.status()?.lastScheduleTime, "2026-11-25T10:01:00Z");
    assert.deepEqual(t.events, [], "no SuccessfulCreate for a Job made before");
  });

  it("suspend: no Job; an unknown schedule: a warning, no Job", async () => {
    const s = setup(cronJob({ suspend: true }), [], "2026-11-25T10:05:00Z");
    assert.deepEqual(await s.c.reconcile("default/tick"), {});
    assert.equal(s.client.of("create").length, 0);
    const bad = setup(cronJob({ schedule: "61 * * * *" }), [], "2026-11-25T10:05:00Z");
    await bad.c.reconcile("default/tick");
    assert.equal(bad.client.of("create").length, 0);
    assert.match(bad.events[0] ?? "", /^Warning UnparseableSchedule unparseable schedule: "61 \* \* \* \*" : end of range/);
  });
});
