import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { unwrap } from "@choreo/kit";
import type { Job } from "@choreo/kit/gen/choreo/batch/v1/batch";
import type { Pod } from "@choreo/kit/gen/choreo/core/v1/core";
import { fromKubeJson } from "@choreo/kit/kube-json";
import { silentLogger } from "@choreo/kit/log";
import { FakeCache, RecordingClient, pod } from "../testing.js";
import { MAX_POD_FAILURE_BACKOFF_MS, backoffDelay, remainingBackoff } from "./backoff.js";
import { COMPLETION_INDEX, formatIndexes, parseIndexes, pendingIndexes, withCompletionIndex } from "./indexed.js";
import { JobController } from "./job-controller.js";
import { assessJob, jobStatus } from "./job-status.js";
import { podCacheTransform } from "../pod-cache.js";

const at = (iso: string): number => Date.parse(iso);

function job(spec: Record<string, unknown>, status?: Record<string, unknown>): Job {
  return unwrap(
    fromKubeJson({
      apiVersion: "batch/v1",
      kind: "Job",
      metadata: { name: "j", namespace: "default", uid: "uid-j", resourceVersion: "3" },
      spec: {
        completions: 3,
        parallelism: 3,
        backoffLimit: 6,
        completionMode: "NonIndexed",
        selector: { matchLabels: { a: "b" } },
        template: { metadata: { labels: { a: "b" } }, spec: { restartPolicy: "Never", containers: [{ name: "c", image: "x" }] } },
        ...spec,
      },
      ...(status ? { status } : {}),
    }),
  ) as Job;
}

const owner = { kind: "Job", name: "j", uid: "uid-j" };
/** A pod of the Job that finished (`phase`) at `finished`, with completion index `index`. */
function finished(name: string, phase: "Succeeded" | "Failed", finishedAt: string, index?: number): Pod {
  const p = pod(name, { owner, phase });
  p.status!.containerStatuses[0]!.state = {
    waiting: undefined,
    running: undefined,
    terminated: { exitCode: phase === "Failed" ? 1 : 0, signal: 0, reason: "", message: "", startedAt: "", finishedAt, containerId: "" },
  };
  if (index !== undefined) p.metadata!.annotations[COMPLETION_INDEX] = String(index);
  return p;
}

function setup(j: Job, pods: Pod[], now: string) {
  const jobs = new FakeCache<Job>();
  const podCache = new FakeCache<Pod>(podCacheTransform());
  const client = new RecordingClient();
  const c = new JobController({ client, jobs, pods: podCache, log: silentLogger(), now: () => at(now) });
  jobs.put(j);
  for (const p of pods) podCache.put(p);
  return { c, client };
}

describe("Indexed completion mode", () => {
  it("completedIndexes as Kubernetes writes them", () => {
    assert.equal(formatIndexes([4, 0, 2, 1]), "0-2,4");
    assert.equal(formatIndexes([]), "");
    assert.equal(formatIndexes([7]), "7");
    assert.equal(formatIndexes([1, 3, 5, 6]), "1,3,5-6");
    assert.deepEqual([...parseIndexes("0-2,4,9", 5)].sort(), [0, 1, 2, 4]);
  });

  it("the pod of an index: annotation, label, hostname, name prefix, env JOB_COMPLETION_INDEX from the annotation", () => {
    const p = withCompletionIndex(pod("x", { owner }), "j", 2);
    assert.equal(p.metadata?.annotations[COMPLETION_INDEX], "2");
    assert.equal(p.metadata?.labels[COMPLETION_INDEX], "2");
    assert.equal(p.metadata?.generateName, "j-2-");
    assert.equal(p.spec?.hostname, "j-2");
    const env = p.spec?.containers[0]?.env.find((e) => e.name === "JOB_COMPLETION_INDEX");
    assert.equal(env?.valueFrom?.fieldRef?.fieldPath, "metadata.annotations['batch.kubernetes.io/job-completion-index']");
  });

  it("counts each index once and completes when every index succeeded", () => {
    const j = job({ completionMode: "Indexed" });
    const pods = [
      finished("a", "Succeeded", "2026-01-01T00:00:00Z", 0),
      finished("b", "Succeeded", "2026-01-01T00:00:01Z", 0),
      finished("c", "Succeeded", "2026-01-01T00:00:02Z", 2),
    ];
    const a = assessJob(j, pods, Date.now());
    assert.equal(a.succeeded, 2);
    assert.equal(a.finish, undefined);
    assert.equal(jobStatus(j, a, "2026-01-01T00:00:03Z").completedIndexes, "0,2");
    assert.deepEqual(pendingIndexes(3, a.completed!, []), [1]);
    const done = assessJob(j, [...pods, finished("d", "Succeeded", "2026-01-01T00:00:04Z", 1)], Date.now());
    assert.equal(done.finish?.type, "Complete");
    assert.equal(jobStatus(j, done, "2026-01-01T00:00:05Z").completedIndexes, "0-2");
  });

  it("the controller makes one pod per pending index", async () => {
    const t = setup(job({ completionMode: "Indexed", completions: 4, parallelism: 3 }, { completedIndexes: "1" }), [], "2026-01-01T00:00:00Z");
    await t.c.reconcile("default/j");
    const made = t.client.of("create").map((a) => unwrap(a.object) as Pod);
    assert.deepEqual(made.map((p) => p.metadata?.annotations[COMPLETION_INDEX]).sort(), ["0", "2", "3"]);
    assert.deepEqual(made.map((p) => p.spec?.hostname).sort(), ["j-0", "j-2", "j-3"]);
  });
});

describe("back-off after pod failures", () => {
  it("10 s doubling per failure since the last success, at most 6 minutes", () => {
    assert.deepEqual([0, 1, 2, 3, 4].map(backoffDelay), [0, 10_000, 20_000, 40_000, 80_000]);
    assert.equal(backoffDelay(12), MAX_POD_FAILURE_BACKOFF_MS);
    const now = at("2026-01-01T00:01:00Z");
    assert.equal(remainingBackoff([finished("f", "Failed", "2026-01-01T00:00:57Z")], now), 7_000);
    const three = [
      finished("f1", "Failed", "2026-01-01T00:00:10Z"),
      finished("f2", "Failed", "2026-01-01T00:00:30Z"),
      finished("f3", "Failed", "2026-01-01T00:00:50Z"),
    ];
    assert.equal(remainingBackoff(three, now), 30_000);
    assert.equal(remainingBackoff([...three, finished("s", "Succeeded", "2026-01-01T00:00:55Z")], now), 0, "a success resets it");
  });

  it("the controller waits before replacing a failed pod, then makes it", async () => {
    const j = job({ completions: 1, parallelism: 1 }, { failed: 1, startTime: "2026-01-01T00:00:00Z" });
    const early = setup(j, [finished("f", "Failed", "2026-01-01T00:00:58Z")], "2026-01-01T00:01:00Z");
    const r = await early.c.reconcile("default/j");
    assert.equal(early.client.of("create").length, 0);
    assert.deepEqual(r, { requeueAfterMs: 8_050 });
    const later = setup(j, [finished("f", "Failed", "2026-01-01T00:00:58Z")], "2026-01-01T00:01:09Z");
    await later.c.reconcile("default/j");
    assert.equal(later.client.of("create").length, 1);
  });
});

describe("ttlSecondsAfterFinished", () => {
  const complete = (ttl: number) =>
    job(
      { completions: 1, parallelism: 1, ttlSecondsAfterFinished: ttl },
      {
        succeeded: 1,
        startTime: "2026-01-01T00:00:00Z",
        completionTime: "2026-01-01T00:00:10Z",
        conditions: [{ type: "Complete", status: "True", lastTransitionTime: "2026-01-01T00:00:10Z" }],
      },
    );
  const pods = [finished("s", "Succeeded", "2026-01-01T00:00:09Z")];

  it("waits on a timer until the TTL passes", async () => {
    const t = setup(complete(30), pods, "2026-01-01T00:00:20Z");
    assert.deepEqual(await t.c.reconcile("default/j"), { requeueAfterMs: 20_050 });
    assert.equal(t.client.of("delete").length, 0);
  });

  it("then deletes the Job with Background propagation (its pods follow through the collector)", async () => {
    const t = setup(complete(30), pods, "2026-01-01T00:00:41Z");
    await t.c.reconcile("default/j");
    assert.deepEqual(
      t.client.of("delete").map((d) => [d.resource, d.name, d.options?.propagationPolicy, d.options?.preconditions?.uid]),
      [["jobs", "j", "Background", "uid-j"]],
    );
    const zero = setup(complete(0), pods, "2026-01-01T00:00:10Z");
    await zero.c.reconcile("default/j");
    assert.equal(zero.client.of("delete").length, 1, "ttl 0: at once");
  });

  it("a Job without a TTL stays", async () => {
    const j = complete(1);
    delete j.spec!.ttlSecondsAfterFinished;
    const t = setup(j, pods, "2026-01-02T00:00:00Z");
    assert.deepEqual(await t.c.reconcile("default/j"), {});
    assert.equal(t.client.of("delete").length, 0);
  });
});
