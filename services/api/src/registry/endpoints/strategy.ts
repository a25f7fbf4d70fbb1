import type { EndpointAddress, Endpoints } from "@choreo/kit/gen/choreo/core/v1/core";
import { validateDns1123Label, validateDns1123Subdomain } from "@choreo/kit/apimachinery";
import type { Strategy } from "../generic/strategy.js";
import { Errors } from "../shared/validation.js";
import { isIPv4, specialIpReasons } from "../shared/ip.js";

/**
 * Kubernetes' validateEpAddress: a valid IP that is not unspecified,
 * loopback, link-local or link-local multicast (a Service or node port
 * forwarding to 127.0.0.1 would reach what listens on the node's loopback:
 * NATS, Redis); an IPv4 (the service proxy is IPv4 only); hostname a DNS
 * label, nodeName a DNS subdomain.
 */
function validateEndpointAddress(e: Errors, a: EndpointAddress, f: string): void {
  const special = specialIpReasons(a.ip);
  e.messages(`${f}.ip`, a.ip, special);
  if (special.length === 0 && !isIPv4(a.ip)) e.invalid(`${f}.ip`, a.ip, "must be an IPv4 address (choreo's service proxy is IPv4 only)");
  if (a.hostname) e.messages(`${f}.hostname`, a.hostname, validateDns1123Label(a.hostname));
  if (a.nodeName !== undefined) e.messages(`${f}.nodeName`, a.nodeName, validateDns1123Subdomain(a.nodeName));
}

/** Endpoints: addresses as Kubernetes checks them, ports valid. */
export const endpointsStrategy: Strategy<Endpoints> = {
  validate(ep) {
    const e = new Errors();
    ep.subsets.forEach((s, i) => {
      s.addresses.forEach((a, j) => validateEndpointAddress(e, a, `subsets[${i}].addresses[${j}]`));
      s.notReadyAddresses.forEach((a, j) => validateEndpointAddress(e, a, `subsets[${i}].notReadyAddresses[${j}]`));
      s.ports.forEach((p, j) => {
        e.port(`subsets[${i}].ports[${j}].port`, p.port);
        if (p.name) e.messages(`subsets[${i}].ports[${j}].name`, p.name, validateDns1123Label(p.name));
        if (p.protocol) e.oneOf(`subsets[${i}].ports[${j}].protocol`, p.protocol, ["TCP", "UDP", "SCTP"]);
      });
    });
    return e.causes;
  },
};
