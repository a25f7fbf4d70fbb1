import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { unwrap } from "@choreo/kit";
import { fromKubeJson } from "@choreo/kit/kube-json";
import type { Job } from "@choreo/kit/gen/choreo/batch/v1/batch";
import { pod } from "../testing.js";
import { assessJob, jobStatus } from "./job-status.js";

const job = (spec: Record<string, unknown>, status?: Record<string, unknown>): Job =>
  unwrap(
    fromKubeJson({
      apiVersion: "batch/v1",
      kind: "Job",
      metadata: { name: "j", namespace: "default", uid: "uid-j" },
      spec: {
        completions: 5,
        parallelism: 2,
        backoffLimit: 6,
        selector: { matchLabels: { a: "b" } },
        template: { metadata: { labels: { a: "b" } }, spec: { restartPolicy: "Never", containers: [{ name: "c", image: "x" }] } },
        ...spec,
      },
      ...(status ? { status } : {}),
    }),
  ) as Job;

describe("assessJob", () => {
  it("keeps min(parallelism, completions − succeeded) pods active", () => {
    const a = assessJob(
      job({}),
      [pod("s1", { phase: "Succeeded" }), pod("s2", { phase: "Succeeded" }), pod("s3", { phase: "Succeeded" }), pod("s4", { phase: "Succeeded" })],
      Date.now(),
    );
    assert.equal(a.succeeded, 4);
    assert.equal(a.wantActive, 1);
    assert.equal(assessJob(job({ suspend: true }), [], Date.now()).wantActive, 0);
  });
  it("completes when enough pods succeeded", () => {
    const a = assessJob(job({ completions: 1 }), [pod("s", { phase: "Succeeded" })], Date.now());
    assert.equal(a.finish?.type, "Complete");
    const st = jobStatus(job({ completions: 1 }), a, "2025-01-01T00:00:00Z");
    assert.equal(st.completionTime, "2025-01-01T00:00:00Z");
    assert.deepEqual(
      st.conditions.map((c) => [c.type, c.status]),
      [["Complete", "True"]],
    );
  });
  it("fails past backoffLimit; with OnFailure container restarts count as failures", () => {
    assert.equal(
      assessJob(job({ backoffLimit: 1 }), [pod("f1", { phase: "Failed" }), pod("f2", { phase: "Failed" })], Date.now()).finish?.reason,
      "BackoffLimitExceeded",
    );
    const onFailure = job({
      backoffLimit: 2,
      template: { metadata: { labels: { a: "b" } }, spec: { restartPolicy: "OnFailure", containers: [{ name: "c", image: "x" }] } },
    });
    assert.equal(assessJob(onFailure, [pod("r", { restarts: 3 })], Date.now()).finish?.reason, "BackoffLimitExceeded");
    assert.equal(assessJob(onFailure, [pod("r", { restarts: 2 })], Date.now()).finish, undefined);
  });
  it("fails past activeDeadlineSeconds from startTime", () => {
    const j = job({ activeDeadlineSeconds: 10 }, { startTime: "2025-01-01T00:00:00Z" });
    assert.equal(assessJob(j, [], Date.parse("2025-01-01T00:00:09Z")).finish, undefined);
    assert.equal(assessJob(j, [], Date.parse("2025-01-01T00:00:10Z")).finish?.reason, "DeadlineExceeded");
  });
  it("counts never go down when finished pods are deleted", () => {
    const a = assessJob(job({}, { succeeded: 3, failed: 1 }), [], Date.now());
    assert.deepEqual([a.succeeded, a.failed, a.wantActive], [3, 1, 2]);
  });
});
