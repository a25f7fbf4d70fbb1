// The VXLAN overlay's pure parts: the published VTEP, the device's script,
// the neighbour and FDB scripts, and ip's JSON. No network.
import assert from "node:assert/strict";
import { describe, it } from "node:test";
import {
  deviceScript,
  fdbScript,
  neighScript,
  parseFdb,
  parseNeigh,
  parseVtep,
  parseVxlanLink,
  underlayOf,
  vtepAddress,
  vtepAnnotations,
  vtepMac,
  vxlanGuardJump,
  vxlanGuardScript,
  VXLAN_GUARD_CHAIN,
  type VxlanSpec,
} from "./vxlan.js";

describe("the published VTEP", () => {
  it("a stable, locally administered unicast MAC per node and the pod CIDR's network address", () => {
    assert.equal(vtepMac("host-a"), vtepMac("host-a"));
    assert.notEqual(vtepMac("host-a"), vtepMac("host-b"));
    assert.match(vtepMac("host-a"), /^0a(:[0-9a-f]{2}){5}$/);
    assert.equal(vtepAddress("10.244.3.0/24"), "10.244.3.0");
    assert.equal(vtepAddress("10.244.3.7/24"), "10.244.3.0");
    assert.throws(() => vtepAddress("fd00::/64"));
  });

  it("round-trips through the annotations; anything else is no VTEP", () => {
    const data = { vni: 1, port: 4789, mac: "0a:01:02:03:04:05", vtep: "10.244.3.0" };
    assert.deepEqual(parseVtep(vtepAnnotations(data)), data);
    assert.equal(parseVtep(undefined), undefined);
    assert.equal(parseVtep({ "choreo.dev/backend-data": JSON.stringify(data) }), undefined, "no backend-type");
    assert.equal(parseVtep({ "choreo.dev/backend-type": "vxlan", "choreo.dev/backend-data": "{" }), undefined);
    assert.equal(parseVtep(vtepAnnotations({ ...data, mac: "zz" })), undefined);
  });
});

describe("deviceScript", () => {
  const spec: VxlanSpec = { mac: "0a:01:02:03:04:05", vtep: "10.244.3.0", local: "172.31.0.13", underlay: "eth0", mtu: 1450, vni: 1, port: 4789 };
  const link = { mtu: 1450, mac: spec.mac, up: true, vni: 1, local: spec.local, port: 4789, underlay: "eth0", learning: false };

  it("creates the device with its MAC, MTU, VNI, port and one /32, then up", () => {
    assert.deepEqual(deviceScript(undefined, [], spec), [
      "link add choreo.vx address 0a:01:02:03:04:05 mtu 1450 type vxlan id 1 local 172.31.0.13 dev eth0 dstport 4789 nolearning",
      "addr add 10.244.3.0/32 dev choreo.vx",
      "link set choreo.vx up",
    ]);
  });

  it("leaves a right device alone, fixes what can change in place, makes again what cannot", () => {
    assert.deepEqual(deviceScript(link, ["10.244.3.0/32"], spec), []);
    assert.deepEqual(deviceScript({ ...link, mtu: 1500, up: false }, ["10.244.3.0/32", "10.1.1.1/32"], spec), [
      "link set choreo.vx mtu 1450",
      "addr flush dev choreo.vx",
      "addr add 10.244.3.0/32 dev choreo.vx",
      "link set choreo.vx up",
    ]);
    assert.equal(deviceScript({ ...link, port: 8472 }, ["10.244.3.0/32"], spec)[0], "link del choreo.vx");
    assert.equal(deviceScript({ ...link, learning: true }, ["10.244.3.0/32"], spec)[0], "link del choreo.vx");
  });

  it("reads the device and the underlay from ip's JSON", () => {
    const json =
      '[{"ifname":"choreo.vx","flags":["BROADCAST","UP"],"mtu":1450,"address":"0a:01:02:03:04:05","linkinfo":{"info_kind":"vxlan","info_data":{"id":1,"local":"172.31.0.13","link":"eth0","port":4789,"learning":false}}}]';
    assert.deepEqual(parseVxlanLink(json), link);
    assert.equal(parseVxlanLink(""), undefined);
    const addrs = '[{"ifname":"lo","mtu":65536,"addr_info":[{"local":"127.0.0.1"}]},{"ifname":"eth0","mtu":9000,"addr_info":[{"local":"172.31.0.13"}]}]';
    assert.deepEqual(underlayOf(addrs, "172.31.0.13"), { ifname: "eth0", mtu: 9000 });
    assert.equal(underlayOf(addrs, "172.31.0.99"), undefined);
  });
});

describe("neighbour and FDB entries", () => {
  const want = [
    { vtep: "10.244.3.0", mac: "0a:00:00:00:00:03", underlay: "172.31.9.13" },
    { vtep: "10.244.4.0", mac: "0a:00:00:00:00:04", underlay: "172.31.9.14" },
  ];

  it("adds what is missing, replaces what moved or is not permanent, deletes the rest", () => {
    const neigh = parseNeigh(
      '[{"dst":"10.244.3.0","lladdr":"0a:00:00:00:00:03","state":["PERMANENT"]},{"dst":"10.244.4.0","lladdr":"0a:00:00:00:00:09","state":["PERMANENT"]},{"dst":"10.244.9.0","state":["FAILED"]}]',
    );
    assert.deepEqual(neighScript(neigh, want), [
      "neigh del 10.244.9.0 dev choreo.vx",
      "neigh replace 10.244.4.0 lladdr 0a:00:00:00:00:04 dev choreo.vx nud permanent",
    ]);
    assert.deepEqual(neighScript([{ ip: "10.244.3.0", mac: "0a:00:00:00:00:03", permanent: false }], want.slice(0, 1)), [
      "neigh replace 10.244.3.0 lladdr 0a:00:00:00:00:03 dev choreo.vx nud permanent",
    ]);
    const fdb = parseFdb(
      '[{"mac":"0a:00:00:00:00:03","dst":"172.31.9.13","flags":["self"],"state":"permanent"},{"mac":"0a:00:00:00:00:04","dst":"172.31.9.99","flags":["self"],"state":"permanent"},{"mac":"0a:00:00:00:00:09","dst":"172.31.9.19","flags":["self"],"state":"permanent"},{"mac":"33:33:00:00:00:01","flags":["self"],"state":"permanent"}]',
    );
    assert.deepEqual(fdbScript(fdb, want), [
      "fdb del 0a:00:00:00:00:04 dev choreo.vx dst 172.31.9.99 self",
      "fdb del 0a:00:00:00:00:09 dev choreo.vx dst 172.31.9.19 self",
      "fdb append 0a:00:00:00:00:04 dev choreo.vx dst 172.31.9.14 self permanent",
    ]);
    assert.deepEqual(fdbScript(parseFdb('[{"mac":"0a:00:00:00:00:03","dst":"172.31.9.13"},{"mac":"0a:00:00:00:00:04","dst":"172.31.9.14"}]'), want), []);
  });
});

describe("the overlay port's guard", () => {
  it("lets each peer's InternalIP through once, sorted, and drops anything else", () => {
    assert.equal(
      vxlanGuardScript(["10.0.0.3", "10.0.0.2", "10.0.0.3", "not-an-ip"]),
      [
        "*filter",
        `:${VXLAN_GUARD_CHAIN} - [0:0]`,
        `-A ${VXLAN_GUARD_CHAIN} -s 10.0.0.2/32 -j RETURN`,
        `-A ${VXLAN_GUARD_CHAIN} -s 10.0.0.3/32 -j RETURN`,
        `-A ${VXLAN_GUARD_CHAIN} -j DROP`,
        "COMMIT",
        "",
      ].join("\n"),
    );
    assert.equal(vxlanGuardJump(4789), `-A INPUT -p udp -m udp --dport 4789 -j ${VXLAN_GUARD_CHAIN}`);
  });
});
