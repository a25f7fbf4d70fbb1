import assert from "node:assert/strict";
import { describe, it } from "node:test";
import type { Pod } from "@choreo/kit/gen/choreo/core/v1/core";
import { Registry } from "prom-client";
import { PodStartLatency } from "./pod-start-latency.js";

describe("pod start latency", () => {
  it("observes a pod this agent started once, at its first Running status; adopted pods and pods that never ran are not observed", async () => {
    const registry = new Registry();
    let now = Date.parse("2026-01-01T00:00:10Z");
    const l = new PodStartLatency(registry, () => now);
    const pod = { metadata: { uid: "u1", creationTimestamp: "2026-01-01T00:00:08Z" } } as unknown as Pod;
    l.starting("u1");
    now += 1500;
    l.reported(pod, { phase: "Pending" });
    now += 500;
    l.reported(pod, { phase: "Running" });
    l.reported(pod, { phase: "Running" }); // once only
    l.reported({ metadata: { uid: "adopted" } } as unknown as Pod, { phase: "Running" });
    l.starting("gone");
    l.forget("gone");
    const text = await registry.metrics();
    assert.match(text, /kubelet_pod_start_duration_seconds_sum 2\n/);
    assert.match(text, /kubelet_pod_start_duration_seconds_count 1\n/);
    assert.match(text, /choreo_pod_startup_latency_seconds_sum 4\n/);
    assert.match(text, /choreo_pod_startup_latency_seconds_count 1\n/);
  });
});
