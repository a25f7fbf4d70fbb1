import { fromKubeJson } from "@choreo/kit/kube-json";
import type { ApiObject } from "@choreo/kit";

/** A pod for registry tests: one nginx container, label app=web; `extra` replaces top-level fields (metadata, spec, status). */
export function testPod(name: string, extra: Record<string, unknown> = {}, ns = "default"): ApiObject {
  return fromKubeJson({
    apiVersion: "v1",
    kind: "Pod",
    metadata: { name, namespace: ns, labels: { app: "web" } },
    spec: { containers: [{ name: "c", image: "nginx:1.25" }] },
    ...extra,
  });
}
