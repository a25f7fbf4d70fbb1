// Object builders shared by this service's tests.
import { unwrap } from "@choreo/kit";
import { fromKubeJson } from "@choreo/kit/kube-json";
import type { Pod, Service } from "@choreo/kit/gen/choreo/core/v1/core";

/** Options of {@link pod}. */
export interface PodInit {
  labels?: Record<string, string>;
  ip?: string;
  ready?: boolean;
  node?: string;
  ports?: { name: string; containerPort: number; protocol?: string }[];
  phase?: string;
  deleting?: boolean;
  namespace?: string;
}

/** A pod in Kubernetes JSON shape, status included. */
export function podJson(name: string, o: PodInit = {}): Record<string, unknown> {
  return {
    apiVersion: "v1",
    kind: "Pod",
    metadata: {
      name,
      namespace: o.namespace ?? "default",
      uid: `uid-${name}`,
      labels: o.labels ?? { app: "web" },
      ...(o.deleting ? { deletionTimestamp: "2024-01-01T00:00:00Z" } : {}),
    },
    spec: { ...(o.node ? { nodeName: o.node } : {}), containers: [{ name: "app", image: "nginx", ports: o.ports ?? [] }] },
    status: {
      phase: o.phase ?? "Running",
      ...(o.ip ? { podIP: o.ip } : {}),
      conditions: [{ type: "Ready", status: o.ready === false ? "False" : "True" }],
    },
  };
}

/** A pod value. */
export function pod(name: string, o: PodInit = {}): Pod {
  return unwrap(fromKubeJson(podJson(name, o))) as Pod;
}

/** A service in Kubernetes JSON shape. */
export function serviceJson(name: string, ports: Record<string, unknown>[], selector: Record<string, string> = { app: "web" }): Record<string, unknown> {
  return { apiVersion: "v1", kind: "Service", metadata: { name, namespace: "default" }, spec: { selector, ports } };
}

/** A service value. */
export function service(name: string, ports: Record<string, unknown>[], selector?: Record<string, string>): Service {
  return unwrap(fromKubeJson(serviceJson(name, ports, selector))) as Service;
}
