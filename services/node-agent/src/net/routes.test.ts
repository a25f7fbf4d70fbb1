// The routes a node wants to the other nodes' pods (host-gw or the VXLAN
// overlay, per peer), and the ip batch that gets the kernel there: pure, no network.
import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { unwrap } from "@choreo/kit";
import { fromKubeJson } from "@choreo/kit/kube-json";
import type { Node } from "@choreo/kit/gen/choreo/core/v1/core";
import { desiredRoutes, inCidr, parseAddresses, parseOnLink, parseRoutes, peers, plan, routeScript } from "./routes.js";
import { vtepAnnotations } from "./vxlan.js";

function node(name: string, podCIDR: string, ip: string, annotations?: Record<string, string>): Node {
  return unwrap(
    fromKubeJson({
      apiVersion: "v1",
      kind: "Node",
      metadata: { name, ...(annotations ? { annotations } : {}) },
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

describe("plan: host-gw or vxlan per peer", () => {
  const vtep = (n: number, port = 4789) => ({ vni: 1, port, mac: `0a:00:00:00:00:0${n}`, vtep: `10.244.${n}.0` });
  const nodes = [
    node("h2", "10.244.2.0/24", "172.31.0.12", vtepAnnotations(vtep(2))),
    node("h3", "10.244.3.0/24", "172.31.9.13", vtepAnnotations(vtep(3))),
    node("h4", "10.244.4.0/24", "172.31.9.14"),
    node("h5", "10.244.5.0/24", "172.31.9.15", vtepAnnotations(vtep(5, 8472))),
  ];
  const ps = peers(nodes, self);
  const onLink = (ip: string): boolean => ip.startsWith("172.31.0.");

  it("auto: host-gw to a peer on a connected network, vxlan to one behind a router, nothing to one without a matching VTEP", () => {
    assert.equal(ps[0]?.vtep?.mac, "0a:00:00:00:00:02", "the published VTEP is read from the annotations");
    const p = plan(ps, { backend: "auto", onLink, overlay: true, vni: 1, port: 4789 });
    assert.deepEqual(p.routes, [
      { dst: "10.244.2.0/24", via: "172.31.0.12" },
      { dst: "10.244.3.0/24", via: "10.244.3.0", dev: "choreo.vx" },
    ]);
    assert.deepEqual(p.vxlan, [{ vtep: "10.244.3.0", mac: "0a:00:00:00:00:03", underlay: "172.31.9.13" }]);
    assert.deepEqual(p.backends, { h2: "host-gw", h3: "vxlan" });
    assert.deepEqual(p.unreachable, ["h4", "h5"], "no VTEP published (h4), another port (h5)");
  });

  it("host-gw routes every peer via its address; vxlan sends every peer with a VTEP through the overlay; no device, no overlay", () => {
    assert.deepEqual(
      plan(ps, { backend: "host-gw", onLink, overlay: true, vni: 1, port: 4789 }).routes.map((r) => r.via),
      ["172.31.0.12", "172.31.9.13", "172.31.9.14", "172.31.9.15"],
    );
    const vx = plan(ps, { backend: "vxlan", onLink, overlay: true, vni: 1, port: 4789 });
    assert.deepEqual(vx.backends, { h2: "vxlan", h3: "vxlan" });
    const none = plan(ps, { backend: "auto", onLink, overlay: false, vni: 1, port: 4789 });
    assert.deepEqual(none.backends, { h2: "host-gw" });
    assert.deepEqual(none.unreachable, ["h3", "h4", "h5"]);
  });

  it("reads on-link addresses from ip -j -batch route get", () => {
    const out =
      '[{"dst":"172.31.0.12","dev":"eth0","prefsrc":"172.31.0.11","flags":[],"uid":0,"cache":[]}]\n' +
      '[{"dst":"172.31.9.13","gateway":"172.31.0.1","dev":"eth0","prefsrc":"172.31.0.11","flags":[],"uid":0,"cache":[]}]\n';
    assert.deepEqual([...parseOnLink(out)], ["172.31.0.12"]);
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

  it("moves a route between host-gw and the overlay device (onlink), and deletes an overlay route with its device", () => {
    const hostGw = { dst: "10.244.3.0/24", via: "172.31.0.13" };
    const overlay = { dst: "10.244.3.0/24", via: "10.244.3.0", dev: "choreo.vx" };
    assert.deepEqual(routeScript([hostGw], [overlay]), ["route replace 10.244.3.0/24 via 10.244.3.0 dev choreo.vx onlink proto 199"]);
    assert.deepEqual(routeScript([overlay], [hostGw]), ["route replace 10.244.3.0/24 via 172.31.0.13 proto 199"]);
    assert.deepEqual(routeScript([overlay], []), ["route del 10.244.3.0/24 via 10.244.3.0 dev choreo.vx onlink proto 199"]);
    assert.deepEqual(routeScript([overlay], [overlay]), []);
  });
});

describe("parsing ip's JSON", () => {
  it("reads routes and addresses", () => {
    assert.deepEqual(parseRoutes('[{"dst":"10.244.2.0/24","gateway":"172.31.0.12","dev":"eth0","protocol":"199","flags":[]},{"dst":"default","dev":"x"}]'), [
      { dst: "10.244.2.0/24", via: "172.31.0.12" },
    ]);
    assert.deepEqual(parseRoutes(""), []);
    assert.deepEqual(parseRoutes('[{"dst":"10.244.3.0/24","gateway":"10.244.3.0","dev":"choreo.vx","flags":["onlink"]}]'), [
      { dst: "10.244.3.0/24", via: "10.244.3.0", dev: "choreo.vx" },
    ]);
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
