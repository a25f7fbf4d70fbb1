import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { canonicalSubsets, desiredSubsets } from "./subsets.js";
import { pod, service } from "./testing.js";

const HTTP = [{ name: "http", port: 80, targetPort: 8080 }];

describe("desiredSubsets", () => {
  it("puts ready pods in addresses and the others in notReadyAddresses, with targetRef and nodeName", () => {
    const s = desiredSubsets(service("web", HTTP), [
      pod("b", { ip: "10.0.0.2", node: "n1" }),
      pod("a", { ip: "10.0.0.1", node: "n2" }),
      pod("c", { ip: "10.0.0.3", ready: false }),
    ]);
    assert.equal(s.length, 1);
    assert.deepEqual(s[0]?.ports, [{ name: "http", port: 8080, protocol: "TCP" }]);
    assert.deepEqual(
      s[0]?.addresses.map((a) => a.ip),
      ["10.0.0.1", "10.0.0.2"],
    );
    assert.deepEqual(s[0]?.addresses[0]?.targetRef, {
      kind: "Pod",
      namespace: "default",
      name: "a",
      uid: "uid-a",
      apiVersion: "",
      resourceVersion: "",
      fieldPath: "",
    });
    assert.equal(s[0]?.addresses[0]?.nodeName, "n2");
    assert.deepEqual(
      s[0]?.notReadyAddresses.map((a) => a.targetRef?.name),
      ["c"],
    );
    assert.equal(s[0]?.notReadyAddresses[0]?.nodeName, undefined);
  });

  it("leaves out pods without an IP, terminating pods and finished pods", () => {
    const s = desiredSubsets(service("web", HTTP), [
      pod("no-ip"),
      pod("going", { ip: "10.0.0.1", deleting: true }),
      pod("done", { ip: "10.0.0.2", phase: "Succeeded" }),
      pod("failed", { ip: "10.0.0.3", phase: "Failed" }),
    ]);
    assert.deepEqual(s, []);
  });

  it("uses the service port when targetPort is unset", () => {
    const s = desiredSubsets(service("web", [{ name: "", port: 80 }]), [pod("a", { ip: "10.0.0.1" })]);
    assert.deepEqual(s[0]?.ports, [{ name: "", port: 80, protocol: "TCP" }]);
  });

  it("resolves a named targetPort per pod and groups pods by their port sets", () => {
    const svc = service("web", [
      { name: "http", port: 80, targetPort: "web" },
      { name: "metrics", port: 9090, protocol: "TCP", targetPort: 9100 },
    ]);
    const s = desiredSubsets(svc, [
      pod("a", { ip: "10.0.0.1", ports: [{ name: "web", containerPort: 8080 }] }),
      pod("b", { ip: "10.0.0.2", ports: [{ name: "web", containerPort: 8081 }] }),
      pod("c", { ip: "10.0.0.3", ports: [{ name: "web", containerPort: 8080 }] }),
      pod("d", { ip: "10.0.0.4", ports: [{ name: "other", containerPort: 1 }] }),
      pod("e", { ip: "10.0.0.5", ports: [{ name: "web", containerPort: 8080, protocol: "UDP" }] }),
    ]);
    assert.equal(s.length, 3);
    const byIps = s.map((x) => ({ ips: x.addresses.map((a) => a.ip), ports: x.ports.map((p) => `${p.name}:${p.port}`) }));
    assert.deepEqual(
      byIps.find((x) => x.ips.includes("10.0.0.1")),
      { ips: ["10.0.0.1", "10.0.0.3"], ports: ["http:8080", "metrics:9100"] },
    );
    assert.deepEqual(
      byIps.find((x) => x.ips.includes("10.0.0.2")),
      { ips: ["10.0.0.2"], ports: ["http:8081", "metrics:9100"] },
    );
    // d and e lack the named port (e has it only for UDP): they serve the numeric port alone.
    assert.deepEqual(
      byIps.find((x) => x.ips.includes("10.0.0.4")),
      { ips: ["10.0.0.4", "10.0.0.5"], ports: ["metrics:9100"] },
    );
  });

  it("skips a pod that lacks the only (named) port", () => {
    const s = desiredSubsets(service("web", [{ name: "http", port: 80, targetPort: "web" }]), [pod("a", { ip: "10.0.0.1" })]);
    assert.deepEqual(s, []);
  });

  it("gives one subset without ports for a service without ports", () => {
    const s = desiredSubsets(service("headless", []), [pod("a", { ip: "10.0.0.1" })]);
    assert.equal(s.length, 1);
    assert.deepEqual(s[0]?.ports, []);
    assert.equal(s[0]?.addresses.length, 1);
  });

  it("is independent of the order of pods", () => {
    const pods = [pod("a", { ip: "10.0.0.1" }), pod("b", { ip: "10.0.0.2", ready: false }), pod("c", { ip: "10.0.0.3" })];
    assert.deepEqual(desiredSubsets(service("web", HTTP), pods), desiredSubsets(service("web", HTTP), [...pods].reverse()));
  });
});

describe("canonicalSubsets", () => {
  it("ignores order and targetRef resourceVersion, sees every real difference", () => {
    const pods = [pod("a", { ip: "10.0.0.1" }), pod("b", { ip: "10.0.0.2" })];
    const s = desiredSubsets(service("web", HTTP), pods);
    const shuffled = s.map((x) => ({
      ...x,
      addresses: [...x.addresses].reverse().map((a) => ({ ...a, targetRef: a.targetRef && { ...a.targetRef, resourceVersion: "42" } })),
    }));
    assert.equal(canonicalSubsets(shuffled), canonicalSubsets(s));
    assert.equal(canonicalSubsets([]), canonicalSubsets([{ addresses: [], notReadyAddresses: [], ports: [] }]));
    const unready = desiredSubsets(service("web", HTTP), [pods[0]!, pod("b", { ip: "10.0.0.2", ready: false })]);
    assert.notEqual(canonicalSubsets(unready), canonicalSubsets(s));
    const moved = desiredSubsets(service("web", HTTP), [pods[0]!, pod("b", { ip: "10.0.0.2", node: "n9" })]);
    assert.notEqual(canonicalSubsets(moved), canonicalSubsets(s));
  });
});
