// The input rules of the security review, through the strategies' validate
// (what the registry runs before any write): Endpoints and Services refuse
// special addresses, hostname/subdomain are DNS labels, quantities are capped.
import assert from "node:assert/strict";
import { describe, it } from "node:test";
import fc from "fast-check";
import { unwrap, type StatusCause } from "@choreo/kit";
import { fromKubeJson } from "@choreo/kit/kube-json";
import type { Endpoints, Pod, Service } from "@choreo/kit/gen/choreo/core/v1/core";
import { ipBytes, isIP, isIPv4, specialIpReasons } from "./shared/ip.js";
import { defaultPodSpec } from "./pods/pod-spec.js";
import { podStrategy } from "./pods/strategy.js";
import { endpointsStrategy } from "./endpoints/strategy.js";
import { serviceStrategy } from "./services/strategy.js";
import type { ClusterIpAllocator } from "./services/cluster-ip.js";
import type { NodePortAllocator } from "./services/node-port.js";

const endpoints = (subset: Record<string, unknown>): Endpoints =>
  unwrap(
    fromKubeJson({ apiVersion: "v1", kind: "Endpoints", metadata: { name: "web", namespace: "default" }, subsets: [{ ports: [{ port: 8080 }], ...subset }] }),
  ) as Endpoints;
const pod = (spec: Record<string, unknown>, status?: Record<string, unknown>): Pod => {
  const p = unwrap(
    fromKubeJson({
      apiVersion: "v1",
      kind: "Pod",
      metadata: { name: "p", namespace: "default" },
      spec: { containers: [{ name: "c", image: "i" }], ...spec },
      ...(status ? { status } : {}),
    }),
  ) as Pod;
  if (p.spec) defaultPodSpec(p.spec); // as the registry does before validating
  if (status) p.status = (unwrap(fromKubeJson({ apiVersion: "v1", kind: "Pod", metadata: { name: "p" }, status })) as Pod).status;
  return p;
};
const line = (c: StatusCause): string => `${c.field}: ${c.message}`;
const errorsOf = (causes: StatusCause[]): string[] => causes.map(line);

describe("Endpoints refuse special addresses like Kubernetes' ValidateNonSpecialIP", () => {
  const LOOPBACK = "may not be in the loopback range (127.0.0.0/8, ::1/128)";
  const LINK_LOCAL = "may not be in the link-local range (169.254.0.0/16, fe80::/10)";
  const MULTICAST = "may not be in the link-local multicast range (224.0.0.0/24, ff02::/10)";
  const cases: [string, string][] = [
    ["127.0.0.1", LOOPBACK],
    ["127.255.0.9", LOOPBACK],
    ["::1", LOOPBACK],
    ["::ffff:127.0.0.1", LOOPBACK],
    ["::ffff:7f00:1", LOOPBACK],
    ["169.254.169.254", LINK_LOCAL],
    ["fe80::1", LINK_LOCAL],
    ["febf::1", LINK_LOCAL],
    ["224.0.0.1", MULTICAST],
    ["224.0.0.251", MULTICAST],
    ["ff02::1", MULTICAST],
    ["0.0.0.0", "may not be unspecified (0.0.0.0)"],
    ["::", "may not be unspecified (::)"],
  ];

  it("127.0.0.1, ::1, 169.254.169.254, 224.0.0.1, 0.0.0.0 … refused with the field path, in addresses and notReadyAddresses", () => {
    for (const [ip, why] of cases) {
      const ready = errorsOf(endpointsStrategy.validate(endpoints({ addresses: [{ ip: "10.244.1.5" }, { ip }] })));
      assert.deepEqual(ready, [`subsets[0].addresses[1].ip: Invalid value: ${JSON.stringify(ip)}: ${why}`], ip);
      const notReady = errorsOf(endpointsStrategy.validate(endpoints({ addresses: [{ ip: "10.244.1.5" }], notReadyAddresses: [{ ip }] })));
      assert.deepEqual(notReady, [`subsets[0].notReadyAddresses[0].ip: Invalid value: ${JSON.stringify(ip)}: ${why}`], ip);
    }
  });

  it("pod and node addresses are accepted: 10.x, 172.16.x, 192.168.x, 100.64.x", () => {
    for (const ip of ["10.244.0.5", "10.0.0.1", "172.16.3.4", "192.168.1.10", "100.64.0.1", "8.8.8.8", "224.0.1.1", "169.253.255.255"]) {
      assert.deepEqual(endpointsStrategy.validate(endpoints({ addresses: [{ ip }], notReadyAddresses: [{ ip }] })), [], ip);
    }
  });

  it("what is not an IPv4 address is refused: other spellings (octal to inet_aton), zones, IPv6 outside the special ranges, garbage", () => {
    const INVALID = "must be a valid IP address, (e.g. 10.9.8.7 or 2001:db8::ffff)";
    for (const ip of ["0177.0.0.1", "127.000.000.001", "10.0.0.1 ", "10.0.0", "10.0.0.256", "", "-F/etc/shadow", "fe80::1%eth0", "x".repeat(3 << 20)]) {
      const errs = endpointsStrategy.validate(endpoints({ addresses: [{ ip }] }));
      assert.equal(errs.length, 1, ip.slice(0, 20));
      assert.equal(errs[0]?.field, "subsets[0].addresses[0].ip");
      assert.ok(errs[0]?.message.endsWith(INVALID), errs[0]?.message.slice(0, 400));
      assert.ok((errs[0]?.message.length ?? 0) < 500, "a long value is cut in the message");
    }
    assert.deepEqual(errorsOf(endpointsStrategy.validate(endpoints({ addresses: [{ ip: "2001:db8::1" }] }))), [
      `subsets[0].addresses[0].ip: Invalid value: "2001:db8::1": must be an IPv4 address (choreo's service proxy is IPv4 only)`,
    ]);
  });

  it("hostname is a DNS label, nodeName a DNS subdomain, port names DNS labels, protocols known", () => {
    const errs = errorsOf(
      endpointsStrategy.validate(
        endpoints({
          addresses: [{ ip: "10.0.0.1", hostname: "-F/etc/shadow", nodeName: "Node_1" }],
          ports: [{ name: "HTTP", port: 80, protocol: "ICMP" }],
        }),
      ),
    );
    assert.equal(errs.length, 4, errs.join("\n"));
    assert.match(errs[0] ?? "", /^subsets\[0\]\.addresses\[0\]\.hostname: Invalid value: "-F\/etc\/shadow": a lowercase RFC 1123 label/);
    assert.match(errs[1] ?? "", /^subsets\[0\]\.addresses\[0\]\.nodeName: Invalid value: "Node_1": a lowercase RFC 1123 subdomain/);
    assert.match(errs[2] ?? "", /^subsets\[0\]\.ports\[0\]\.name: Invalid value: "HTTP"/);
    assert.match(errs[3] ?? "", /^subsets\[0\]\.ports\[0\]\.protocol: Unsupported value: "ICMP"/);
    assert.deepEqual(
      endpointsStrategy.validate(
        endpoints({ addresses: [{ ip: "10.0.0.1", hostname: "web-0", nodeName: "node-1" }], ports: [{ name: "http", port: 80, protocol: "TCP" }] }),
      ),
      [],
    );
  });
});

describe("IP parsing", () => {
  it("bytes of IPv4, IPv6 and IPv4-mapped forms", () => {
    const hex = (s: string): string => Buffer.from(ipBytes(s) ?? []).toString("hex");
    assert.equal(hex("10.1.2.3"), "00000000000000000000ffff0a010203");
    assert.equal(hex("::ffff:10.1.2.3"), "00000000000000000000ffff0a010203");
    assert.equal(hex("::1"), "00000000000000000000000000000001");
    assert.equal(hex("fe80::1:2"), "fe800000000000000000000000010002");
    assert.equal(hex("1:2:3:4:5:6:7:8"), "00010002000300040005000600070008");
    assert.equal(hex("1::"), "00010000000000000000000000000000");
    assert.equal(hex("64:ff9b::1.2.3.4"), "0064ff9b000000000000000001020304");
    assert.equal(ipBytes("1.2.3"), undefined);
    assert.equal(isIPv4("10.96.000.010"), false, "one address, one spelling (one allocation key)");
  });

  it("adversarial strings: an answer within 500 ms each, never an exception (property)", () => {
    const arb = fc.oneof(
      fc.string({ unit: fc.constantFrom("1", ".", ":", "f", "0", "%", "2", "5", "x"), maxLength: 60 }),
      fc.tuple(fc.constantFrom("1", ".", ":", "::", "1.", "ff:"), fc.integer({ min: 1, max: 1 << 20 })).map(([u, n]) => u.repeat(n)),
      fc.string({ unit: "grapheme", maxLength: 60 }),
    );
    fc.assert(
      fc.property(arb, (s) => {
        const time = (): number => {
          const t = performance.now();
          isIP(s);
          specialIpReasons(s);
          return performance.now() - t;
        };
        // A slow case is timed again: a machine's pause passes, a slow parser does not.
        const ms = Math.min(time(), ...(time() < 500 ? [] : [time(), time()]));
        assert.ok(ms < 500, `${ms} ms for ${s.length} characters`);
        const ok = isIP(s);
        const why = specialIpReasons(s);
        if (!ok) assert.equal(why.length, 1);
        if (ok) assert.equal(ipBytes(s)?.length, 16);
      }),
      { numRuns: 500, seed: 45 },
    );
  });
});

describe("Services", () => {
  const strategy = serviceStrategy({} as ClusterIpAllocator, {} as NodePortAllocator);
  const service = (spec: Record<string, unknown>): Service =>
    unwrap(
      fromKubeJson({
        apiVersion: "v1",
        kind: "Service",
        metadata: { name: "s", namespace: "default" },
        spec: { type: "ClusterIP", sessionAffinity: "None", ports: [{ port: 80, protocol: "TCP" }], ...spec },
      }),
    ) as Service;

  it("clusterIPs may not say other than clusterIP (the proxy reads clusterIP)", () => {
    assert.deepEqual(strategy.validate(service({ clusterIP: "10.96.0.10", clusterIPs: ["10.96.0.10"] })), []);
    assert.deepEqual(errorsOf(strategy.validate(service({ clusterIP: "10.96.0.10", clusterIPs: ["127.0.0.1"] }))), [
      'spec.clusterIPs[0]: Invalid value: "127.0.0.1": must match `clusterIP`',
    ]);
    assert.match(
      errorsOf(strategy.validate(service({ clusterIP: "10.96.0.10", clusterIPs: ["10.96.0.10", "::1"] })))[0] ?? "",
      /^spec\.clusterIPs: .*no more than one IP/,
    );
  });

  it("a string targetPort is capped at 15 characters before its regex", () => {
    const errs = strategy.validate(service({ ports: [{ port: 80, protocol: "TCP", targetPort: "a".repeat(1 << 20) }] }));
    assert.equal(errs[0]?.field, "spec.ports[0].targetPort");
    assert.deepEqual(strategy.validate(service({ ports: [{ port: 80, protocol: "TCP", targetPort: "http" }] })), []);
  });
});

describe("pods", () => {
  const LABEL = /a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and must start and end with an alphanumeric character/;

  it("spec.hostname and spec.subdomain are DNS labels: -F/etc/shadow, UPPER, 64 characters refused; web-0 accepted", () => {
    for (const field of ["hostname", "subdomain"]) {
      for (const bad of ["-F/etc/shadow", "UPPER", "a.b", "web-", "a".repeat(64)]) {
        const errs = podStrategy.validate(pod({ [field]: bad }));
        assert.equal(errs.length, 1, `${field}=${bad}`);
        assert.equal(errs[0]?.field, `spec.${field}`);
        assert.equal(errs[0]?.reason, "FieldValueInvalid");
        assert.match(errs[0]?.message ?? "", bad.length > 63 ? /must be no more than 63 characters/ : LABEL);
      }
      for (const ok of ["web-0", "a", "0", "a".repeat(63)]) assert.deepEqual(podStrategy.validate(pod({ [field]: ok })), [], `${field}=${ok}`);
    }
  });

  it("env names: Kubernetes' charset (a leading '-' included), '=' and empty refused", () => {
    const env = (name: string): StatusCause[] => podStrategy.validate(pod({ containers: [{ name: "c", image: "i", env: [{ name, value: "v" }] }] }));
    for (const ok of ["A", "-x", ".x", "_x", "a.b-c_9"]) assert.deepEqual(env(ok), [], ok);
    for (const bad of ["A=B", "=", "1A", "a b", "a\nb", "é"]) assert.equal(env(bad)[0]?.field, "spec.containers[0].env[0].name", bad);
    assert.equal(env("")[0]?.reason, "FieldValueRequired");
  });

  it("a 3 MiB quantity in a pod's resources is refused quickly, with a short message", () => {
    for (const q of ["1".repeat(3 << 20) + "x", "1".repeat(3 << 20)]) {
      const p = pod({ containers: [{ name: "c", image: "i", resources: { limits: { cpu: q }, requests: { memory: q } } }] });
      const t = performance.now();
      const errs = podStrategy.validate(p);
      const ms = performance.now() - t;
      assert.ok(ms < 2_000, `${ms} ms`);
      assert.deepEqual(
        errs.map((c) => c.field),
        ["spec.containers[0].resources.limits[cpu]", "spec.containers[0].resources.requests[memory]"],
      );
      for (const c of errs) {
        assert.match(c.message, /: quantities must be no more than 64 characters$/);
        assert.match(c.message, /\.\.\. \(31457\d\d characters\)/);
        assert.ok(c.message.length < 400);
      }
    }
    assert.deepEqual(
      podStrategy.validate(
        pod({ containers: [{ name: "c", image: "i", resources: { limits: { cpu: "1.5", memory: "1.5Gi" }, requests: { cpu: "500m", memory: "1e3" } } }] }),
      ),
      [],
    );
  });

  it("status IPs are IPs, podIPs[0] the podIP", () => {
    assert.deepEqual(podStrategy.validate(pod({}, { podIP: "10.244.0.5", podIPs: [{ ip: "10.244.0.5" }], hostIP: "192.168.1.2" })), []);
    assert.deepEqual(errorsOf(podStrategy.validate(pod({}, { podIP: "nope", podIPs: [{ ip: "10.244.0.5" }], hostIP: "-F" }))), [
      'status.podIP: Invalid value: "nope": must be a valid IP address, (e.g. 10.9.8.7 or 2001:db8::ffff)',
      'status.podIPs[0].ip: Invalid value: "10.244.0.5": must be equal to `podIP`',
      'status.hostIP: Invalid value: "-F": must be a valid IP address, (e.g. 10.9.8.7 or 2001:db8::ffff)',
    ]);
  });
});
