// test-tier: servers
// CronJobs and the Job additions against the real api, scheduler and
// replication processes, with hollow node agents in this process (pods that
// exit after a set time): Jobs created at the minute, Forbid, history limits,
// a kill -9 of the replication actor between runs, kubectl 1.32's create
// cronjob / create job --from=cronjob (protobuf), Indexed Jobs and
// ttlSecondsAfterFinished.
import assert from "node:assert/strict";
import { after, before, describe, it } from "node:test";
import { jetstreamManager } from "@nats-io/jetstream";
import { isNotFound, unwrap } from "@choreo/kit";
import { fromKubeJson } from "@choreo/kit/kube-json";
import { silentLogger } from "@choreo/kit/log";
import { waitFor } from "@choreo/kit/testing";
import type { CronJob, Job } from "@choreo/kit/gen/choreo/batch/v1/batch";
import type { Event, Pod } from "@choreo/kit/gen/choreo/core/v1/core";
import { NodeAgent } from "@choreo/node-agent/agent";
import { hollowNodeConfig } from "@choreo/node-agent/hollow-nodes";
import { HollowRuntime } from "@choreo/node-agent/runtime/hollow";
import { startCluster, withLogsOnFailure, type TestCluster } from "./support/cluster.js";
import { run, writeKubeconfig } from "./support/kubectl.js";

const KUBECTL = "/usr/bin/kubectl";
const EXIT_AFTER = "hollow.choreo.dev/exit-after-ms";

describe("cronjobs: CronJob controller and Job additions", () => {
  let c: TestCluster;
  let kubeconfig: string;
  const ac = new AbortController();
  const agents: Promise<void>[] = [];

  const kubectl = (...args: string[]) => run(KUBECTL, args, kubeconfig);
  const jobsOf = async (cronJob: string): Promise<Job[]> =>
    (await c.client.list("jobs", { namespace: "default" })).items
      .map((o) => unwrap(o) as Job)
      .filter((j) => j.metadata?.ownerReferences.some((r) => r.kind === "CronJob" && r.name === cronJob && r.controller));
  const cronJob = async (name: string): Promise<CronJob> => unwrap(await c.client.get("cronjobs", "default", name)) as CronJob;
  const events = async (name: string, reason: string): Promise<Event[]> =>
    (await c.client.list("events", { namespace: "default" })).items
      .map((o) => unwrap(o) as Event)
      .filter((e) => e.involvedObject?.name === name && e.reason === reason);
  const complete = (j: Job) => j.status?.conditions.some((x) => x.type === "Complete" && x.status === "True") ?? false;

  before(async () => {
    c = await startCluster({ actors: [{ name: "scheduler" }, { name: "replication" }] });
    kubeconfig = writeKubeconfig(c);
    for (const i of [0, 1]) {
      const node = hollowNodeConfig(i, "cj-");
      const runtime = new HollowRuntime({ podCidr: node.podCidr, hostIp: node.internalIp });
      const agent = new NodeAgent({
        client: c.client,
        nc: c.nc,
        jsm: await jetstreamManager(c.nc),
        node,
        runtime,
        log: silentLogger(),
        restartBackoff: undefined,
      });
      agents.push(agent.start(ac.signal).catch(() => undefined));
    }
    await waitFor(async () => (await c.client.list("nodes")).items.length === 2, { timeoutMs: 30_000, message: "2 nodes" });
  });
  after(async () => {
    ac.abort();
    await Promise.all(agents);
    await c?.stop();
  });

  it("kubectl create cronjob, get cronjobs (-o wide), create job --from=cronjob; bad schedule and time zone refused with 422", () =>
    withLogsOnFailure(c, async () => {
      const created = await kubectl("create", "cronjob", "hello", "--image=busybox:1", "--schedule=*/1 * * * *");
      assert.equal(created.code, 0, created.stderr);
      assert.match(created.stdout, /cronjob\.batch\/hello created/);
      const suspended = await kubectl("patch", "cronjob", "hello", "--type=merge", "-p", '{"spec":{"suspend":true}}');
      assert.equal(suspended.code, 0, suspended.stderr);

      const got = await kubectl("get", "cronjobs");
      assert.equal(got.code, 0, got.stderr);
      const [header, row] = got.stdout.trim().split("\n");
      assert.match(header ?? "", /^NAME\s+SCHEDULE\s+TIMEZONE\s+SUSPEND\s+ACTIVE\s+LAST SCHEDULE\s+AGE$/);
      // (A minute may have begun between the create and the patch: then one Job ran.)
      assert.match(row ?? "", /^hello\s+\*\/1 \* \* \* \*\s+<none>\s+True\s+(0\s+<none>|1\s+\d+s)\s+\d+s$/);
      const wide = await kubectl("get", "cj", "hello", "-o", "wide");
      assert.match(wide.stdout, /CONTAINERS\s+IMAGES\s+SELECTOR/);
      assert.match(wide.stdout, /hello\s+busybox:1\s+<none>/);

      const described = await kubectl("describe", "cronjob", "hello");
      assert.equal(described.code, 0, described.stderr);
      assert.match(described.stdout, /Schedule:\s+\*\/1 \* \* \* \*/);
      assert.match(described.stdout, /Concurrency Policy:\s+Allow/);
      assert.match(described.stdout, /Successful Job History Limit:\s+3/);
      const explained = await kubectl("explain", "cronjob.spec.timeZone");
      assert.equal(explained.code, 0, explained.stderr);
      assert.match(explained.stdout, /KIND:\s+CronJob/);
      const all = await kubectl("get", "all");
      assert.match(all.stdout, /cronjob\.batch\/hello/);

      const manual = await kubectl("create", "job", "manual", "--from=cronjob/hello");
      assert.equal(manual.code, 0, manual.stderr);
      assert.match(manual.stdout, /job\.batch\/manual created/);
      const job = unwrap(await c.client.get("jobs", "default", "manual")) as Job;
      assert.equal(job.metadata?.annotations["cronjob.kubernetes.io/instantiate"], "manual");
      assert.deepEqual(
        job.metadata?.ownerReferences.map((r) => [r.kind, r.name]),
        [["CronJob", "hello"]],
      );
      assert.equal(job.spec?.template?.spec?.containers[0]?.image, "busybox:1");

      const bad = await kubectl("create", "cronjob", "bad", "--image=busybox", "--schedule=61 * * * *");
      assert.notEqual(bad.code, 0);
      assert.match(bad.stderr, /spec\.schedule: Invalid value: "61 \* \* \* \*": end of range \(61\) above maximum \(59\): 61/);
      const zone = await run(KUBECTL, ["apply", "-f", "-"], kubeconfig, {
        input: JSON.stringify({
          apiVersion: "batch/v1",
          kind: "CronJob",
          metadata: { name: "mars", namespace: "default" },
          spec: {
            schedule: "@hourly",
            timeZone: "Mars/Olympus",
            jobTemplate: { spec: { template: { spec: { restartPolicy: "Never", containers: [{ name: "c", image: "busybox" }] } } } },
          },
        }),
      });
      assert.notEqual(zone.code, 0);
      assert.match(zone.stderr, /spec\.timeZone: Invalid value: "Mars\/Olympus": unknown time zone Mars\/Olympus/);
      assert.equal((await kubectl("get", "cronjob", "bad")).code, 1, "nothing stored");

      // Deleting the CronJob takes its Jobs along (Background).
      const deleted = await kubectl("delete", "cronjob", "hello");
      assert.equal(deleted.code, 0, deleted.stderr);
      await waitFor(
        async () => {
          try {
            await c.client.get("jobs", "default", "manual");
            return false;
          } catch (err) {
            return isNotFound(err);
          }
        },
        { timeoutMs: 30_000, message: "the manual Job follows its CronJob" },
      );
    }));

  it("every minute: a Job at each minute (2 runs, one across a kill -9 of the replication actor), history limit 1 prunes, Forbid skips while a long Job runs", () =>
    withLogsOnFailure(c, async () => {
      const template = (exitAfterMs: number) => ({
        spec: {
          template: {
            metadata: { annotations: { [EXIT_AFTER]: String(exitAfterMs) } },
            spec: { restartPolicy: "Never", containers: [{ name: "c", image: "busybox" }] },
          },
        },
      });
      const make = (name: string, spec: Record<string, unknown>) =>
        c.client.create(
          fromKubeJson({ apiVersion: "batch/v1", kind: "CronJob", metadata: { name, namespace: "default" }, spec: { schedule: "*/1 * * * *", ...spec } }),
        );
      await make("tick", { successfulJobsHistoryLimit: 1, jobTemplate: template(1_000) });
      await make("slow", { concurrencyPolicy: "Forbid", jobTemplate: template(600_000) });

      // The first run, at the next minute.
      const first = await waitFor(async () => (await jobsOf("tick"))[0], { timeoutMs: 80_000, intervalMs: 200, message: "tick's first Job" });
      const scheduled = Date.parse(first.metadata?.annotations["batch.kubernetes.io/cronjob-scheduled-timestamp"] ?? "");
      assert.equal(scheduled % 60_000, 0, "scheduled at a whole minute");
      assert.equal(first.metadata?.name, `tick-${scheduled / 60_000}`);
      const late = Date.parse(first.metadata?.creationTimestamp ?? "") - scheduled;
      assert.ok(late >= 0 && late < 20_000, `created at the minute (${late} ms after)`);

      // kill -9 the replication actor and start it again: the run is not repeated, the next one comes.
      await c.actors.get("replication")?.kill();
      await c.startActor("replication");

      const second = await waitFor(async () => (await jobsOf("tick")).find((j) => j.metadata?.name === `tick-${scheduled / 60_000 + 1}`), {
        timeoutMs: 90_000,
        intervalMs: 200,
        message: "tick's second Job, a minute later",
      });
      assert.ok(second);
      // The second completes; history limit 1 deletes the first.
      const cj = await waitFor(
        async () => {
          const jobs = await jobsOf("tick");
          const t = await cronJob("tick");
          return jobs.length === 1 &&
            jobs[0]?.metadata?.name === second.metadata?.name &&
            complete(jobs[0]) &&
            t.status?.active.length === 0 &&
            t.status.lastSuccessfulTime
            ? t
            : undefined;
        },
        { timeoutMs: 60_000, intervalMs: 200, message: "the first Job pruned, the second complete" },
      );
      assert.equal(Date.parse(cj.status?.lastScheduleTime ?? ""), scheduled + 60_000);
      assert.equal((await events("tick", "SuccessfulDelete")).length >= 1, true, "a SuccessfulDelete event");

      // slow: its first Job still runs, so the next minute was skipped.
      await waitFor(async () => (await events("slow", "JobAlreadyActive")).length > 0, { timeoutMs: 40_000, message: "slow skipped a run (Forbid)" });
      const slowJobs = await jobsOf("slow");
      assert.equal(slowJobs.length, 1, `one Job for slow (${slowJobs.map((j) => j.metadata?.name).join(",")})`);
      assert.equal((await cronJob("slow")).status?.active.length, 1);
      // (An Event in flight at the kill may be lost, and a run made just before it is adopted without one.)
      const creates = (await events("tick", "SuccessfulCreate")).map((e) => e.message);
      assert.ok(creates.length <= 2 && new Set(creates).size === creates.length, `no run repeated after the restart: ${creates.join("; ")}`);
      // The garbage collector follows Jobs as dependents: Foreground deletes slow's running Job before slow,
      // Orphan leaves tick's Job without its ownerReference.
      const slowJob = slowJobs[0]!.metadata!.name;
      const deleting = unwrap(await c.client.delete("cronjobs", "default", "slow", { propagationPolicy: "Foreground" })) as CronJob;
      assert.ok(deleting.metadata?.finalizers.includes("foregroundDeletion"), "slow waits for its Job");
      const gone = (p: Promise<unknown>): Promise<boolean> =>
        p.then(
          () => false,
          (err: unknown) => isNotFound(err),
        );
      await waitFor(
        async () => {
          // The CronJob read first: once it is gone, its Job must be gone already.
          const cjGone = await gone(c.client.get("cronjobs", "default", "slow"));
          const jobGone = await gone(c.client.get("jobs", "default", slowJob));
          assert.ok(!cjGone || jobGone, "the CronJob never goes before its Job");
          return cjGone && jobGone;
        },
        { timeoutMs: 60_000, intervalMs: 200, message: "slow and its Job gone (Foreground)" },
      );
      const tickUid = (await cronJob("tick")).metadata!.uid;
      await c.client.delete("cronjobs", "default", "tick", { propagationPolicy: "Orphan" });
      await waitFor(() => gone(c.client.get("cronjobs", "default", "tick")), { timeoutMs: 60_000, intervalMs: 200, message: "tick gone (Orphan)" });
      const tickJobs = (await c.client.list("jobs", { namespace: "default" })).items
        .map((o) => unwrap(o) as Job)
        .filter((j) => j.metadata?.name.startsWith("tick-"));
      assert.ok(tickJobs.length >= 1, "tick's Jobs stay");
      assert.ok(
        tickJobs.every((j) => !j.metadata?.ownerReferences.some((r) => r.uid === tickUid)),
        "without the ownerReference to tick",
      );
      for (const j of tickJobs) await c.client.delete("jobs", "default", j.metadata!.name);
    }));

  it("an Indexed Job: pods with indexes 0..n-1, JOB_COMPLETION_INDEX and hostnames; completedIndexes; ttlSecondsAfterFinished deletes it", () =>
    withLogsOnFailure(c, async () => {
      await c.client.create(
        fromKubeJson({
          apiVersion: "batch/v1",
          kind: "Job",
          metadata: { name: "idx", namespace: "default" },
          spec: {
            completions: 3,
            parallelism: 3,
            completionMode: "Indexed",
            ttlSecondsAfterFinished: 3,
            template: {
              metadata: { annotations: { [EXIT_AFTER]: "1500" } },
              spec: { restartPolicy: "Never", containers: [{ name: "c", image: "busybox" }] },
            },
          },
        }),
      );
      const job = await waitFor(
        async () => {
          const j = unwrap(await c.client.get("jobs", "default", "idx")) as Job;
          return complete(j) ? j : undefined;
        },
        { timeoutMs: 60_000, intervalMs: 200, message: "the Indexed Job complete" },
      );
      assert.equal(job.status?.completedIndexes, "0-2");
      assert.equal(job.status?.succeeded, 3);
      const pods = (await c.client.list("pods", { namespace: "default", labelSelector: "batch.kubernetes.io/job-name=idx" })).items.map(
        (o) => unwrap(o) as Pod,
      );
      const indexes = pods.map((p) => p.metadata?.annotations["batch.kubernetes.io/job-completion-index"]).sort();
      assert.deepEqual(indexes, ["0", "1", "2"]);
      for (const p of pods) {
        const i = p.metadata?.annotations["batch.kubernetes.io/job-completion-index"] ?? "";
        assert.equal(p.metadata?.labels["batch.kubernetes.io/job-completion-index"], i);
        assert.equal(p.spec?.hostname, `idx-${i}`);
        assert.ok(p.metadata?.name.startsWith(`idx-${i}-`), p.metadata?.name);
        const env = p.spec?.containers[0]?.env.find((e) => e.name === "JOB_COMPLETION_INDEX");
        assert.equal(env?.valueFrom?.fieldRef?.fieldPath, "metadata.annotations['batch.kubernetes.io/job-completion-index']");
      }
      const listed = await kubectl("get", "job", "idx", "-o", "jsonpath={.status.completedIndexes}");
      assert.equal(listed.stdout, "0-2");
      // ttlSecondsAfterFinished: 3 → the Job and then its pods go.
      await waitFor(
        async () => {
          try {
            await c.client.get("jobs", "default", "idx");
            return false;
          } catch (err) {
            return isNotFound(err);
          }
        },
        { timeoutMs: 30_000, message: "the Job deleted after its TTL" },
      );
      await waitFor(async () => (await c.client.list("pods", { namespace: "default", labelSelector: "batch.kubernetes.io/job-name=idx" })).items.length === 0, {
        timeoutMs: 30_000,
        message: "its pods collected",
      });
    }));
});
