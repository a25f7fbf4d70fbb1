import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { fromKubeJson } from "@choreo/kit/kube-json";
import { unwrap } from "@choreo/kit";
import type { Endpoints, Service } from "@choreo/kit/gen/choreo/core/v1/core";
import { backendsOf, isProxyChain, proxyJumps, reachableBackends, renderBootstrap, renderProxyRules } from "./rules.js";

const P = "CHO-abcdef-";
const OPTS = { chainPrefix: P, clusterCidr: "10.244.0.0/16" };

function service(name: string, spec: Record<string, unknown>): Service {
  return unwrap(
    fromKubeJson({ apiVersion: "v1", kind: "Service", metadata: { name, namespace: "default" }, spec: { selector: { app: name }, ...spec } }),
  ) as Service;
}

function endpoints(name: string, subsets: Record<string, unknown>[]): Endpoints {
  return unwrap(fromKubeJson({ apiVersion: "v1", kind: "Endpoints", metadata: { name, namespace: "default" }, subsets })) as Endpoints;
}

const lines = (script: string, pattern: RegExp): string[] => script.split("\n").filter((l) => pattern.test(l));

describe("renderProxyRules", () => {
  const web = service("web", {
    clusterIP: "10.96.0.10",
    ports: [
      { name: "http", port: 80, targetPort: "http" },
      { name: "dns", port: 53, protocol: "UDP" },
    ],
  });
  const webEp = endpoints("web", [
    {
      addresses: [{ ip: "10.244.1.3" }, { ip: "10.244.1.2" }, { ip: "10.244.2.2" }],
      notReadyAddresses: [{ ip: "10.244.9.9" }],
      ports: [{ name: "http", port: 8080, protocol: "TCP" }],
    },
  ]);

  it("spreads a service port over its ready endpoints with kube-proxy's probabilities", () => {
    const { script, chains } = renderProxyRules([web], [webEp], OPTS);
    const svcRule = lines(script, /-A CHO-abcdef-SERVICES -d 10\.96\.0\.10\/32 -p tcp -m tcp --dport 80 -j CHO-abcdef-SVC-/);
    assert.equal(svcRule.length, 1);
    const svcChain = svcRule[0]!.split(" -j ")[1]!;
    const spread = lines(script, new RegExp(`^-A ${svcChain} `));
    assert.equal(spread.length, 3);
    assert.match(spread[0]!, /--probability 0\.3333333333 -j CHO-abcdef-SEP-/);
    assert.match(spread[1]!, /--probability 0\.5000000000 -j CHO-abcdef-SEP-/);
    assert.doesNotMatch(spread[2]!, /probability/);
    assert.deepEqual(
      lines(script, /DNAT/).map((l) => l.split("--to-destination ")[1]),
      ["10.244.1.2:8080", "10.244.1.3:8080", "10.244.2.2:8080"],
    );
    assert.equal(lines(script, /10\.244\.9\.9/).length, 0, "not-ready addresses get no traffic");
    assert.equal(lines(script, /-s 10\.244\.1\.2\/32 -j MARK --set-xmark 0x4000\/0x4000/).length, 1, "hairpin traffic is marked");
    assert.equal(lines(script, /! -s 10\.244\.0\.0\/16 -d 10\.96\.0\.10\/32 .* -j MARK/).length, 1, "off-cluster clients are marked");
    // The UDP port has no endpoint port named "dns": rejected in the filter table.
    assert.deepEqual(lines(script, /REJECT/), [
      "-A CHO-abcdef-SERVICES -d 10.96.0.10/32 -p udp -m udp --dport 53 -j REJECT --reject-with icmp-port-unreachable",
    ]);
    for (const c of [...chains.nat, ...chains.filter]) {
      assert.ok(c.length <= 28, `${c} fits iptables' chain name limit`);
      assert.ok(isProxyChain(P, c), c);
    }
  });

  it("routes node ports, skips headless services, declares and deletes stale chains, adds jumps", () => {
    const np = service("np", { type: "NodePort", clusterIP: "10.96.0.11", ports: [{ port: 80, targetPort: 8080, nodePort: 30080 }] });
    const headless = service("hl", { clusterIP: "None", ports: [{ port: 80 }] });
    const empty = service("empty", { type: "NodePort", clusterIP: "10.96.0.12", ports: [{ port: 81, nodePort: 30081 }] });
    const npEp = endpoints("np", [{ addresses: [{ ip: "10.244.1.5" }], ports: [{ name: "", port: 8080, protocol: "TCP" }] }]);
    const jumps = proxyJumps(P);
    const { script, chains } = renderProxyRules([np, headless, empty], [npEp], { ...OPTS, stale: { nat: [`${P}SVC-000000000000`] }, jumps });
    assert.equal(lines(script, /-A CHO-abcdef-NODEPORTS -p tcp -m tcp --dport 30080 -j MARK/).length, 1);
    assert.equal(lines(script, /-A CHO-abcdef-NODEPORTS -p tcp -m tcp --dport 30080 -j CHO-abcdef-SVC-/).length, 1);
    assert.equal(lines(script, /-m addrtype --dst-type LOCAL -p tcp -m tcp --dport 30081 -j REJECT/).length, 1);
    assert.equal(lines(script, /10\.96\.0\.12.*-j CHO-abcdef-SVC/).length, 0);
    const nat = script.slice(script.indexOf("*nat"));
    const servicesRules = lines(nat, /^-A CHO-abcdef-SERVICES /);
    assert.equal(servicesRules.at(-1), "-A CHO-abcdef-SERVICES -m addrtype --dst-type LOCAL -j CHO-abcdef-NODEPORTS", "node ports come after every VIP");
    assert.ok(nat.includes(":CHO-abcdef-SVC-000000000000 - [0:0]"), "a stale chain is declared (emptied)");
    assert.ok(nat.includes("-X CHO-abcdef-SVC-000000000000\nCOMMIT"), "then deleted");
    assert.ok(script.includes("-I FORWARD 1 -m conntrack --ctstate NEW -j CHO-abcdef-SERVICES"));
    assert.ok(!chains.nat.includes(`${P}SVC-000000000000`));
    assert.equal(renderProxyRules([np], [npEp], OPTS).script, renderProxyRules([np], [npEp], OPTS).script, "deterministic");
  });

  it("matches endpoint ports by name and protocol, without duplicates", () => {
    const sp = web.spec!.ports[0]!;
    const ep = endpoints("web", [
      {
        addresses: [{ ip: "10.244.1.2" }],
        ports: [
          { name: "http", port: 8080, protocol: "TCP" },
          { name: "metrics", port: 9090, protocol: "TCP" },
        ],
      },
      { addresses: [{ ip: "10.244.1.2" }, { ip: "10.244.1.4" }], ports: [{ name: "http", port: 8080, protocol: "TCP" }] },
      { addresses: [{ ip: "10.244.1.7" }], ports: [{ name: "http", port: 8080, protocol: "UDP" }] },
    ]);
    assert.deepEqual(backendsOf(ep, sp), [
      { ip: "10.244.1.2", port: 8080 },
      { ip: "10.244.1.4", port: 8080 },
    ]);
    assert.deepEqual(backendsOf(undefined, sp), []);
    assert.ok(!isProxyChain(P, `${P}FORWARD`), "the node network's chains are not the proxy's");
    assert.ok(!isProxyChain(P, "CHO-bbbbbb-SERVICES"));
  });
});

describe("renderBootstrap", () => {
  it("declares only the missing base chains and jumps: what an earlier agent left keeps serving", () => {
    const fresh = renderBootstrap({ chainPrefix: P, existing: { filter: [], nat: [] }, jumps: proxyJumps(P) });
    assert.deepEqual(lines(fresh, /^:/), [`:${P}SERVICES - [0:0]`, `:${P}SERVICES - [0:0]`, `:${P}NODEPORTS - [0:0]`, `:${P}PX-POST - [0:0]`]);
    assert.equal(lines(fresh, /^-I /).length, 6, "every jump, at the top");
    assert.equal(lines(fresh, /MASQUERADE/).length, 1);
    const left = {
      filter: [`${P}SERVICES`],
      nat: [`${P}SERVICES`, `${P}NODEPORTS`, `${P}PX-POST`, `${P}SVC-0123456789ab`, `${P}SEP-0123456789ab`],
    };
    assert.equal(renderBootstrap({ chainPrefix: P, existing: left, jumps: [] }).trim(), "", "nothing declared (emptied), nothing deleted");
    const oneJump = renderBootstrap({ chainPrefix: P, existing: left, jumps: proxyJumps(P).slice(0, 1) });
    assert.equal(oneJump, `*nat\n-I PREROUTING 1 -j ${P}SERVICES\nCOMMIT\n`);
  });
});

describe("leaving out unreachable peers' endpoints", () => {
  const web = service("web", { clusterIP: "10.96.0.10", ports: [{ name: "http", port: 80, targetPort: 8080 }] });
  const ep = endpoints("web", [
    {
      addresses: [
        { ip: "10.244.1.2", nodeName: "a" },
        { ip: "10.244.2.2", nodeName: "b" },
        { ip: "10.244.3.2", nodeName: "c" },
      ],
      ports: [{ name: "http", port: 8080, protocol: "TCP" }],
    },
  ]);
  const dnat = (script: string): string[] => lines(script, /DNAT/).map((l) => l.split("--to-destination ")[1]!);

  it("gives an unreachable node's endpoints no new connections; keeps them all when none would be left (fail open)", () => {
    const all = renderProxyRules([web], [ep], OPTS);
    assert.deepEqual(dnat(all.script), ["10.244.1.2:8080", "10.244.2.2:8080", "10.244.3.2:8080"]);
    assert.equal(all.leftOut, 0);
    const withoutC = renderProxyRules([web], [ep], { ...OPTS, leaveOut: new Set(["c"]) });
    assert.deepEqual(dnat(withoutC.script), ["10.244.1.2:8080", "10.244.2.2:8080"]);
    assert.equal(withoutC.leftOut, 1);
    assert.equal(lines(withoutC.script, /--probability 0\.5000000000/).length, 1, "the spread is over the two left");
    const none = renderProxyRules([web], [ep], { ...OPTS, leaveOut: new Set(["a", "b", "c"]) });
    assert.deepEqual(dnat(none.script), dnat(all.script), "fail open");
    assert.equal(none.leftOut, 0);
    assert.equal(lines(none.script, /REJECT/).length, 0);
  });

  it("keeps an address without a node name", () => {
    const kept = reachableBackends([{ ip: "1", node: "c" }, { ip: "2" }], new Set(["c"]));
    assert.deepEqual(kept, [{ ip: "2" }]);
  });
});
