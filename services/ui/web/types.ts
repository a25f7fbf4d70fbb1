// The few fields of Kubernetes objects the view reads (JSON as the gateway serves it).

export interface Meta {
  name: string;
  namespace?: string;
  uid?: string;
  resourceVersion?: string;
  creationTimestamp?: string;
  deletionTimestamp?: string;
  labels?: Record<string, string>;
  ownerReferences?: { kind: string; name: string }[];
}

export interface Condition {
  type: string;
  status: string;
  reason?: string;
  message?: string;
  lastTransitionTime?: string;
}

export interface ContainerState {
  waiting?: { reason?: string; message?: string };
  running?: { startedAt?: string };
  terminated?: { exitCode?: number; reason?: string };
}

export interface Pod {
  metadata: Meta;
  spec?: { nodeName?: string; containers?: { name: string; image?: string }[]; restartPolicy?: string };
  status?: {
    phase?: string;
    podIP?: string;
    hostIP?: string;
    startTime?: string;
    reason?: string;
    message?: string;
    conditions?: Condition[];
    containerStatuses?: { name: string; ready?: boolean; restartCount?: number; image?: string; state?: ContainerState }[];
  };
}

export interface Node {
  metadata: Meta;
  spec?: { unschedulable?: boolean; podCIDR?: string; taints?: { key: string; value?: string; effect: string }[] };
  status?: {
    conditions?: Condition[];
    capacity?: Record<string, string>;
    allocatable?: Record<string, string>;
    addresses?: { type: string; address: string }[];
    nodeInfo?: {
      kubeletVersion?: string;
      osImage?: string;
      kernelVersion?: string;
      containerRuntimeVersion?: string;
      architecture?: string;
      operatingSystem?: string;
    };
  };
}

export interface Workload {
  kind?: string;
  metadata: Meta;
  spec?: {
    replicas?: number;
    /** Deployment: a LabelSelector; ReplicationController: a map. */
    selector?: { matchLabels?: Record<string, string> } | Record<string, string>;
    strategy?: { type?: string; rollingUpdate?: { maxSurge?: number | string; maxUnavailable?: number | string } };
    minReadySeconds?: number;
    template?: { metadata?: { labels?: Record<string, string> }; spec?: { containers?: { name: string; image?: string }[] } };
  };
  status?: {
    replicas?: number;
    readyReplicas?: number;
    updatedReplicas?: number;
    availableReplicas?: number;
    observedGeneration?: number;
    conditions?: Condition[];
  };
}

export interface KEvent {
  metadata: Meta;
  type?: string;
  reason?: string;
  message?: string;
  count?: number;
  lastTimestamp?: string;
  eventTime?: string;
  source?: { component?: string };
  reportingComponent?: string;
}

export interface Endpoints {
  metadata: Meta;
  subsets?: { addresses?: { ip: string; targetRef?: { name: string } }[]; notReadyAddresses?: { ip: string }[]; ports?: { port: number; name?: string }[] }[];
}

export interface Service {
  metadata: Meta;
  spec?: {
    type?: string;
    clusterIP?: string;
    selector?: Record<string, string>;
    sessionAffinity?: string;
    ports?: { name?: string; port: number; targetPort?: number | string; protocol?: string; nodePort?: number }[];
  };
}

/** Any object with metadata. */
export interface KObject {
  metadata: Meta;
}

export function keyOf(o: KObject): string {
  return o.metadata.namespace ? `${o.metadata.namespace}/${o.metadata.name}` : o.metadata.name;
}
