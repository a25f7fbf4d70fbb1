import type { Endpoints, Service } from "@choreo/kit/gen/choreo/core/v1/core";
import { validateDns1035Label } from "@choreo/kit/apimachinery";
import { invalid } from "@choreo/kit";
import type { Strategy } from "./strategy.js";
import { Errors } from "./validation.js";
import { ClusterIpAllocator, isIPv4 } from "./cluster-ip.js";

const owner = (s: Service): string => `${s.metadata?.namespace}/${s.metadata?.name}`;

/** Services: port defaults, ClusterIP allocated from the service range. */
export function serviceStrategy(ips: ClusterIpAllocator): Strategy<Service> {
  return {
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
      if (spec.type !== "ClusterIP") return; // refused by validate
      if (spec.clusterIp === "None") {
        spec.clusterIps = ["None"];
        return;
      }
      if (spec.clusterIp) {
        if (!isIPv4(spec.clusterIp) || !ips.contains(spec.clusterIp)) {
          throw invalid("Service", svc.metadata?.name ?? "", [{ field: "spec.clusterIPs", reason: "FieldValueInvalid", message: `Invalid value: ${JSON.stringify([spec.clusterIp])}: failed to allocate IP ${spec.clusterIp}: the provided IP (${spec.clusterIp}) is not in the valid range` }]);
        }
        if (!(await ips.claim(spec.clusterIp, owner(svc)))) {
          throw invalid("Service", svc.metadata?.name ?? "", [{ field: "spec.clusterIPs", reason: "FieldValueInvalid", message: `Invalid value: ${JSON.stringify([spec.clusterIp])}: failed to allocate IP ${spec.clusterIp}: provided IP is already allocated` }]);
        }
      } else {
        spec.clusterIp = await ips.allocate(owner(svc));
      }
      spec.clusterIps = [spec.clusterIp];
      spec.ipFamilies = ["IPv4"];
      spec.ipFamilyPolicy ||= "SingleStack";
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
    },
    validate(svc, old) {
      const e = new Errors();
      const spec = svc.spec;
      if (!spec) {
        e.required("spec", undefined);
        return e.causes;
      }
      e.oneOf("spec.type", spec.type, ["ClusterIP"]);
      if (spec.clusterIp !== "None") e.required("spec.ports", spec.ports);
      const names = new Set<string>();
      spec.ports.forEach((p, i) => {
        const f = `spec.ports[${i}]`;
        if (spec.ports.length > 1) e.required(`${f}.name`, p.name);
        if (p.name) {
          e.messages(`${f}.name`, p.name, validateDns1035Label(p.name));
          if (names.has(p.name)) e.duplicate(`${f}.name`, p.name);
          names.add(p.name);
        }
        e.port(`${f}.port`, p.port);
        e.oneOf(`${f}.protocol`, p.protocol, ["TCP", "UDP", "SCTP"]);
        const t = p.targetPort?.value;
        if (t?.$case === "intVal") e.port(`${f}.targetPort`, t.value);
        if (t?.$case === "strVal" && !/^[a-z0-9]([-a-z0-9]*[a-z0-9])?$/.test(t.value)) e.invalid(`${f}.targetPort`, t.value, "must be a valid port name");
      });
      e.labelMap("spec.selector", spec.selector);
      e.oneOf("spec.sessionAffinity", spec.sessionAffinity, ["None", "ClientIP"]);
      if (old?.spec && old.spec.clusterIp && spec.clusterIp !== old.spec.clusterIp) e.invalid("spec.clusterIPs[0]", spec.clusterIp, "may not change once set");
      return e.causes;
    },
    async abortCreate(svc) {
      const ip = svc.spec?.clusterIp;
      if (ip && ip !== "None") await ips.release(ip, owner(svc));
    },
    async afterDelete(svc) {
      const ip = svc.spec?.clusterIp;
      if (ip && ip !== "None") await ips.release(ip, owner(svc));
    },
  };
}

/** Endpoints: addresses must be IPs, ports valid. */
export const endpointsStrategy: Strategy<Endpoints> = {
  validate(ep) {
    const e = new Errors();
    ep.subsets.forEach((s, i) => {
      [...s.addresses, ...s.notReadyAddresses].forEach((a, j) => {
        if (!isIPv4(a.ip)) e.invalid(`subsets[${i}].addresses[${j}].ip`, a.ip, "must be a valid IP address");
      });
      s.ports.forEach((p, j) => e.port(`subsets[${i}].ports[${j}].port`, p.port));
    });
    return e.causes;
  },
};
