// Fakes for unit tests: nodes and pods built from a few fields.
import { emptyMeta } from "@choreo/kit";
import type { Node, Pod, Taint, Toleration } from "@choreo/kit/gen/choreo/core/v1/core";

export function fakeNode(name: string, o: { cpu?: string; memory?: string; pods?: string; ready?: string; labels?: Record<string, string>; taints?: Taint[]; unschedulable?: boolean } = {}): Node {
  const alloc = { cpu: o.cpu ?? "4", memory: o.memory ?? "8Gi", pods: o.pods ?? "110" };
  return {
    apiVersion: "v1", kind: "Node",
    metadata: emptyMeta({ name, uid: `uid-${name}`, labels: { "kubernetes.io/hostname": name, ...o.labels } }),
    spec: { podCidr: "", podCidrs: [], unschedulable: o.unschedulable ?? false, taints: o.taints ?? [], providerId: "" },
    status: { capacity: alloc, allocatable: alloc, conditions: [{ type: "Ready", status: o.ready ?? "True", lastHeartbeatTime: "", lastTransitionTime: "", reason: "", message: "" }], addresses: [], nodeInfo: undefined, daemonEndpoints: undefined },
  };
}

export function fakePod(name: string, o: { cpu?: string; memory?: string; node?: string; hostPort?: number; selector?: Record<string, string>; tolerations?: Toleration[]; owner?: string; priority?: number } = {}): Pod {
  const requests: Record<string, string> = {};
  if (o.cpu) requests.cpu = o.cpu;
  if (o.memory) requests.memory = o.memory;
  return {
    apiVersion: "v1", kind: "Pod",
    metadata: emptyMeta({ name, namespace: "default", uid: `uid-${name}`, creationTimestamp: "2025-01-01T00:00:00Z", ownerReferences: o.owner ? [{ apiVersion: "v1", kind: "ReplicationController", name: o.owner, uid: o.owner, controller: true, blockOwnerDeletion: true }] : [] }),
    spec: {
      volumes: [], initContainers: [], restartPolicy: "Always", dnsPolicy: "", nodeSelector: o.selector ?? {}, serviceAccountName: "", nodeName: o.node ?? "", hostNetwork: false, hostname: "", subdomain: "",
      schedulerName: "default-scheduler", tolerations: o.tolerations ?? [], priorityClassName: "", priority: o.priority, preemptionPolicy: "", enableServiceLinks: false,
      containers: [{
        name: "c", image: "i", command: [], args: [], workingDir: "", env: [], volumeMounts: [], terminationMessagePath: "", terminationMessagePolicy: "", imagePullPolicy: "", stdin: false, tty: false,
        ports: o.hostPort ? [{ name: "", hostPort: o.hostPort, containerPort: 80, protocol: "TCP", hostIp: "" }] : [],
        resources: { limits: {}, requests },
      }],
    },
    status: undefined,
  };
}
