import type { Service } from "@choreo/kit/gen/choreo/core/v1/core";
import { validateDns1123Label } from "@choreo/kit/apimachinery";
import { invalid } from "@choreo/kit";
import type { Strategy } from "../generic/strategy.js";
import { Errors } from "../shared/validation.js";
import { ClusterIpAllocator, isIPv4 } from "./cluster-ip.js";
import type { NodePortAllocator } from "./node-port.js";

const owner = (s: Service): string => `${s.metadata?.namespace}/${s.metadata?.name}`;

/** The service types choreo serves. */
export const SERVICE_TYPES = ["ClusterIP", "NodePort"] as const;

/** Node ports a Service holds. */
const nodePortsOf = (s: Service): number[] => (s.spec?.type === "NodePort" ? s.spec.ports.map((p) => p.nodePort).filter((n) => n > 0) : []);

/** Claims the requested ClusterIP or allocates one. */
async function takeClusterIp(svc: Service, ips: ClusterIpAllocator): Promise<void> {
  const spec = svc.spec;
  if (!spec) return;
  if (spec.clusterIp) {
    if (!isIPv4(spec.clusterIp) || !ips.contains(spec.clusterIp)) {
      throw invalid("Service", svc.metadata?.name ?? "", [
        {
          field: "spec.clusterIPs",
          reason: "FieldValueInvalid",
          message: `Invalid value: ${JSON.stringify([spec.clusterIp])}: failed to allocate IP ${spec.clusterIp}: the provided IP (${spec.clusterIp}) is not in the valid range`,
        },
      ]);
    }
    if (!(await ips.claim(spec.clusterIp, owner(svc)))) {
      throw invalid("Service", svc.metadata?.name ?? "", [
        {
          field: "spec.clusterIPs",
          reason: "FieldValueInvalid",
          message: `Invalid value: ${JSON.stringify([spec.clusterIp])}: failed to allocate IP ${spec.clusterIp}: provided IP is already allocated`,
        },
      ]);
    }
  } else {
    spec.clusterIp = await ips.allocate(owner(svc));
  }
  spec.clusterIps = [spec.clusterIp];
  spec.ipFamilies = ["IPv4"];
  spec.ipFamilyPolicy ||= "SingleStack";
}

/**
 * Claims the requested node ports of a NodePort Service and allocates the
 * missing ones; on a refusal releases what it took and throws Kubernetes'
 * field error.
 */
async function takeNodePorts(svc: Service, ports: NodePortAllocator): Promise<void> {
  const spec = svc.spec;
  if (spec?.type !== "NodePort") return;
  const taken: number[] = [];
  const fail = async (i: number, value: number, why: string): Promise<never> => {
    for (const n of taken) await ports.release(n, owner(svc));
    throw invalid("Service", svc.metadata?.name ?? "", [
      { field: `spec.ports[${i}].nodePort`, reason: "FieldValueInvalid", message: `Invalid value: ${value}: ${why}` },
    ]);
  };
  // Requested ports first, so an allocated one never takes a port asked for further down.
  for (const [i, p] of spec.ports.entries()) {
    if (p.nodePort === 0) continue;
    if (!ports.contains(p.nodePort)) await fail(i, p.nodePort, `provided port is not in the valid range. The range of valid ports is ${ports.describe()}`);
    if (!(await ports.claim(p.nodePort, owner(svc)))) await fail(i, p.nodePort, "provided port is already allocated");
    taken.push(p.nodePort);
  }
  for (const p of spec.ports) {
    if (p.nodePort !== 0) continue;
    p.nodePort = await ports.allocate(owner(svc));
    taken.push(p.nodePort);
  }
}

async function releaseNodePorts(svc: Service, ports: NodePortAllocator): Promise<void> {
  for (const n of nodePortsOf(svc)) await ports.release(n, owner(svc));
}

/** Services: names are DNS-1035 labels; port defaults, ClusterIP allocated from the service range, node ports from the node port range. */
export function serviceStrategy(ips: ClusterIpAllocator, nodePorts: NodePortAllocator): Strategy<Service> {
  return {
    nameRule: "dns1035",
    async prepareCreate(svc) {
      const spec = svc.spec;
      if (!spec) return;
      spec.type ||= "ClusterIP";
      spec.sessionAffinity ||= "None";
      spec.internalTrafficPolicy ||= "Cluster";
      for (const p of spec.ports) {
        p.protocol ||= "TCP";
        p.targetPort ??= { value: { $case: "intVal", value: p.port } };
      }
      if (!(SERVICE_TYPES as readonly string[]).includes(spec.type)) return; // refused by validate
      if (spec.clusterIp === "None") {
        spec.clusterIps = ["None"];
        return; // a headless NodePort is refused by validate
      }
      await takeNodePorts(svc, nodePorts);
      try {
        await takeClusterIp(svc, ips);
      } catch (err) {
        await releaseNodePorts(svc, nodePorts);
        throw err;
      }
    },
    prepareUpdate(svc, old) {
      const spec = svc.spec;
      if (!spec || !old.spec) return;
      spec.clusterIp ||= old.spec.clusterIp;
      if (spec.clusterIps.length === 0) spec.clusterIps = old.spec.clusterIps;
      if (spec.ipFamilies.length === 0) spec.ipFamilies = old.spec.ipFamilies;
      spec.ipFamilyPolicy ||= old.spec.ipFamilyPolicy;
      spec.type ||= "ClusterIP";
      spec.sessionAffinity ||= "None";
      spec.internalTrafficPolicy ||= old.spec.internalTrafficPolicy;
      for (const p of spec.ports) {
        p.protocol ||= "TCP";
        p.targetPort ??= { value: { $case: "intVal", value: p.port } };
      }
      // A node port left out of an update keeps the one allocated (matched by port and protocol).
      if (spec.type === "NodePort" && old.spec.type === "NodePort") {
        for (const p of spec.ports) {
          if (p.nodePort !== 0) continue;
          p.nodePort = old.spec.ports.find((o) => o.port === p.port && o.protocol === p.protocol)?.nodePort ?? 0;
        }
      }
    },
    validate(svc, old) {
      const e = new Errors();
      const spec = svc.spec;
      if (!spec) {
        e.required("spec", undefined);
        return e.causes;
      }
      e.oneOf("spec.type", spec.type, SERVICE_TYPES);
      if (spec.type === "NodePort" && spec.clusterIp === "None") e.invalid("spec.clusterIPs[0]", "None", "may not be set to 'None' for NodePort services");
      if (spec.clusterIp !== "None") e.required("spec.ports", spec.ports);
      const names = new Set<string>();
      const held = old ? nodePortsOf(old) : [];
      spec.ports.forEach((p, i) => {
        const f = `spec.ports[${i}]`;
        if (spec.ports.length > 1) e.required(`${f}.name`, p.name);
        if (p.name) {
          e.messages(`${f}.name`, p.name, validateDns1123Label(p.name)); // Kubernetes: a DNS-1123 label ("5432-5432", what kubectl create service names, is valid)
          if (names.has(p.name)) e.duplicate(`${f}.name`, p.name);
          names.add(p.name);
        }
        e.port(`${f}.port`, p.port);
        e.oneOf(`${f}.protocol`, p.protocol, ["TCP", "UDP", "SCTP"]);
        const t = p.targetPort?.value;
        if (t?.$case === "intVal") e.port(`${f}.targetPort`, t.value);
        if (t?.$case === "strVal" && (t.value.length > 15 || !/^[a-z0-9]([-a-z0-9]*[a-z0-9])?$/.test(t.value)))
          e.invalid(`${f}.targetPort`, t.value, "must be a valid port name");
        if (p.nodePort !== 0 && spec.type !== "NodePort") e.forbidden(`${f}.nodePort`, `may not be used when \`type\` is '${spec.type}'`);
        if (p.nodePort !== 0 && spec.ports.slice(0, i).some((q) => q.nodePort === p.nodePort)) e.duplicate(`${f}.nodePort`, p.nodePort);
        // Node ports are taken at create only (prepareUpdate cannot reach Redis), so an update keeps them.
        if (old && spec.type === "NodePort" && !held.includes(p.nodePort))
          e.invalid(`${f}.nodePort`, p.nodePort, "node ports may not be added or changed on update; recreate the Service");
      });
      e.labelMap("spec.selector", spec.selector);
      e.oneOf("spec.sessionAffinity", spec.sessionAffinity, ["None", "ClientIP"]);
      // Fields stored but not acted on (docs/stored-only-fields.md), checked as Kubernetes does.
      const timeout = spec.sessionAffinityConfig?.clientIp?.timeoutSeconds;
      if (spec.sessionAffinityConfig && spec.sessionAffinity !== "ClientIP")
        e.invalid("spec.sessionAffinityConfig", spec.sessionAffinityConfig, "must not be set when `sessionAffinity` is None");
      if (timeout !== undefined && (timeout <= 0 || timeout > 86400))
        e.invalid("spec.sessionAffinityConfig.clientIP.timeoutSeconds", timeout, "must be greater than 0 and less than 86400");
      if (spec.externalTrafficPolicy) {
        e.oneOf("spec.externalTrafficPolicy", spec.externalTrafficPolicy, ["Cluster", "Local"]);
        if (spec.type !== "NodePort")
          e.invalid("spec.externalTrafficPolicy", spec.externalTrafficPolicy, "may only be set when `type` is 'NodePort' or 'LoadBalancer'");
      }
      if (spec.internalTrafficPolicy) e.oneOf("spec.internalTrafficPolicy", spec.internalTrafficPolicy, ["Cluster", "Local"]);
      if (spec.trafficDistribution !== undefined) e.oneOf("spec.trafficDistribution", spec.trafficDistribution, ["PreferClose"]);
      for (const [field, set] of [
        ["loadBalancerSourceRanges", spec.loadBalancerSourceRanges.length > 0],
        ["loadBalancerClass", spec.loadBalancerClass !== undefined],
        ["allocateLoadBalancerNodePorts", spec.allocateLoadBalancerNodePorts !== undefined],
        ["healthCheckNodePort", spec.healthCheckNodePort !== 0],
      ] as const)
        if (set) e.forbidden(`spec.${field}`, "may only be used when `type` is 'LoadBalancer'");
      if (old?.spec && old.spec.clusterIp && spec.clusterIp !== old.spec.clusterIp) e.invalid("spec.clusterIPs[0]", spec.clusterIp, "may not change once set");
      // The proxy and DNS read clusterIP; clusterIPs is its single-stack copy and may not say otherwise.
      if (spec.clusterIps.length > 1)
        e.invalid("spec.clusterIPs", spec.clusterIps, "may specify no more than one IP for each IP family (choreo serves IPv4 single-stack)");
      if (spec.clusterIps.length > 0 && spec.clusterIps[0] !== spec.clusterIp) e.invalid("spec.clusterIPs[0]", spec.clusterIps[0], "must match `clusterIP`");
      if (old?.spec && old.spec.type !== spec.type && (old.spec.type === "NodePort" || spec.type === "NodePort")) {
        e.invalid("spec.type", spec.type, "may not change to or from NodePort; recreate the Service");
      }
      return e.causes;
    },
    async abortCreate(svc) {
      const ip = svc.spec?.clusterIp;
      if (ip && ip !== "None") await ips.release(ip, owner(svc));
      await releaseNodePorts(svc, nodePorts);
    },
    async afterDelete(svc) {
      const ip = svc.spec?.clusterIp;
      if (ip && ip !== "None") await ips.release(ip, owner(svc));
      await releaseNodePorts(svc, nodePorts);
    },
    async restored(svc) {
      // The allocations went with the store's lost tail: the Service holds them again (nobody else can have them yet).
      const ip = svc.spec?.clusterIp;
      if (ip && ip !== "None") await ips.claim(ip, owner(svc));
      for (const n of nodePortsOf(svc)) await nodePorts.claim(n, owner(svc));
    },
  };
}
