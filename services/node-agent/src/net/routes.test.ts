// The routes a node wants to the other nodes' pods (host-gw), and the ip
// batch that gets the kernel there: pure, no network.
import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { unwrap } from "@choreo/kit";
import { fromKubeJson } from "@choreo/kit/kube-json";
import type { Node } from "@choreo/kit/gen/choreo/core/v1/core";
import { desiredRoutes, inCidr, parseAddresses, parseRoutes, routeScript } from "./routes.js";

function node(name: string, podCIDR: string, ip: string): Node {
  return unwrap(
    fromKubeJson({
      apiVersion: "v1",
      kind: "Node",
      metadata: { name },
      spec: podCIDR ? { podCIDR } : {},
      status: { addresses: ip ? [{ type: "InternalIP", address: ip }] : [] },
    }),
  ) as Node;
}

const self = { node: "h1", podCidr: "10.244.1.0/24", clusterCidr: "10.244.0.0/16", localAddresses: new Set(["172.31.0.11", "10.244.1.1"]) };

describe("desiredRoutes", () => {
  it("routes every other node's pod CIDR via its InternalIP, sorted", () => {
    const nodes = [node("h3", "10.244.3.0/24", "172.31.0.13"), node("h1", "10.244.1.0/24", "172.31.0.11"), node("h2", "10.244.2.0/24", "172.31.0.12")];
    assert.deepEqual(desiredRoutes(nodes, self), [
      { dst: "10.244.2.0/24", via: "172.31.0.12" },
      { dst: "10.244.3.0/24", via: "172.31.0.13" },
    ]);
  });

  it("leaves out itself, nodes without a CIDR or address, its own addresses, and agents on this machine (InternalIP on their bridge)", () => {
    const nodes = [
      node("h1", "10.244.1.0/24", "172.31.0.11"),
      node("no-cidr", "", "172.31.0.20"),
      node("no-ip", "10.244.4.0/24", ""),
      node("same-host", "10.244.5.0/24", "172.31.0.11"),
      node("bridge-ip", "10.244.6.0/24", "10.244.6.1"),
      node("same-cidr", "10.244.1.0/24", "172.31.0.30"),
      node("v6", "10.244.7.0/24", "fd00::1"),
    ];
    assert.deepEqual(desiredRoutes(nodes, self), []);
  });
});

describe("routeScript", () => {
  it("deletes what is no longer wanted, replaces what moved, adds what is new, keeps the rest", () => {
    const have = [
      { dst: "10.244.2.0/24", via: "172.31.0.12" },
      { dst: "10.244.3.0/24", via: "172.31.0.13" },
      { dst: "10.244.9.0/24", via: "172.31.0.19" },
    ];
    const want = [
      { dst: "10.244.2.0/24", via: "172.31.0.12" },
      { dst: "10.244.3.0/24", via: "172.31.0.33" },
      { dst: "10.244.4.0/24", via: "172.31.0.14" },
    ];
    assert.deepEqual(routeScript(have, want), [
      "route del 10.244.9.0/24 via 172.31.0.19 proto 199",
      "route replace 10.244.3.0/24 via 172.31.0.33 proto 199",
      "route replace 10.244.4.0/24 via 172.31.0.14 proto 199",
    ]);
    assert.deepEqual(routeScript(want, want), []);
  });
});

describe("parsing ip's JSON", () => {
  it("reads routes and addresses", () => {
    assert.deepEqual(parseRoutes('[{"dst":"10.244.2.0/24","gateway":"172.31.0.12","dev":"eth0","protocol":"199","flags":[]},{"dst":"default","dev":"x"}]'), [
      { dst: "10.244.2.0/24", via: "172.31.0.12" },
    ]);
    assert.deepEqual(parseRoutes(""), []);
    assert.deepEqual(
      [...parseAddresses('[{"ifname":"lo","addr_info":[{"local":"127.0.0.1"}]},{"ifname":"eth0","addr_info":[{"local":"172.31.0.11"}]}]')],
      ["127.0.0.1", "172.31.0.11"],
    );
  });

  it("inCidr", () => {
    assert.equal(inCidr("10.244.6.1", "10.244.0.0/16"), true);
    assert.equal(inCidr("10.245.0.1", "10.244.0.0/16"), false);
    assert.equal(inCidr("fd00::1", "10.244.0.0/16"), false);
  });
});
