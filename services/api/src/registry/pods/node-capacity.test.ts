import assert from "node:assert/strict";
import { before, describe, it } from "node:test";
import { ApiError, unwrap } from "@choreo/kit";
import { fromKubeJson, toKubeJson } from "@choreo/kit/kube-json";
import { Pod as PodMsg, type Pod } from "@choreo/kit/gen/choreo/core/v1/core";
import { startMemoryRegistry, type MemoryRegistry } from "../../testing/memory-registry.js";
import { testPod } from "../../testing/objects.js";
import { misfit, podShare, PodShares } from "./node-capacity.js";

const sized = (name: string, cpu: string, memory = "") =>
  unwrap(
    testPod(name, {
      metadata: { name, namespace: "default", uid: `uid-${name}` },
      spec: { containers: [{ name: "c", image: "i", resources: { requests: { cpu, ...(memory ? { memory } : {}) } } }] },
    }),
  ) as Pod;
const node = (allocatable: Record<string, string>) =>
  unwrap(fromKubeJson({ apiVersion: "v1", kind: "Node", metadata: { name: "n" }, status: { allocatable } })) as never;

describe("node capacity", () => {
  it("misfit sums the shares of the other pods, terminated ones and the pod itself left out", () => {
    const n = node({ cpu: "1", memory: "1Gi", pods: "3" });
    const others = [podShare(sized("a", "400m", "512Mi")), podShare(sized("b", "400m"))];
    assert.equal(misfit(n, others, podShare(sized("c", "200m"))), undefined);
    assert.equal(misfit(n, others, podShare(sized("c", "201m"))), "Insufficient cpu");
    assert.equal(misfit(n, others, podShare(sized("c", "0", "513Mi"))), "Insufficient memory");
    assert.equal(misfit(n, [...others, podShare(sized("d", "0"))], podShare(sized("c", "0"))), "Too many pods");
    const done = sized("b", "400m");
    done.status = { ...(done.status ?? ({} as never)), phase: "Succeeded" } as never;
    assert.equal(misfit(n, [others[0]!, podShare(done)], podShare(sized("c", "600m"))), undefined, "a terminated pod frees its share");
    assert.equal(misfit(n, others, podShare(sized("a", "600m"))), undefined, "the pod itself does not count against itself");
  });

  it("PodShares decodes each stored version once, and again when the revision holds other bytes", () => {
    const shares = new PodShares();
    let decodes = 0;
    const decode = (s: { bytes: Buffer }) => (decodes++, PodMsg.decode(s.bytes));
    const a = Buffer.from(PodMsg.encode(sized("a", "300m")).finish());
    const b = Buffer.from(PodMsg.encode(sized("b", "1500m")).finish());
    assert.equal(shares.of({ bytes: a, revision: 7 }, decode).cpu, 300n);
    assert.equal(shares.of({ bytes: a, revision: 7 }, decode).cpu, 300n);
    assert.equal(decodes, 1, "a version seen is not decoded again");
    // Another revision line (a fresh store) reusing revision 7 for another object: the size differs, decoded again.
    assert.equal(shares.of({ bytes: b, revision: 7 }, decode).cpu, 1500n);
    assert.equal(decodes, 2);
  });

  it("PodShares forgets its oldest versions past its bound", () => {
    const shares = new PodShares(8);
    const bytes = Buffer.from(PodMsg.encode(sized("a", "1")).finish());
    for (let r = 1; r <= 20; r++) shares.of({ bytes, revision: r }, (s) => PodMsg.decode(s.bytes));
    assert.ok(shares.size <= 8, `size ${shares.size}`);
    let decodes = 0;
    shares.of({ bytes, revision: 20 }, (s) => (decodes++, PodMsg.decode(s.bytes)));
    shares.of({ bytes, revision: 1 }, (s) => (decodes++, PodMsg.decode(s.bytes)));
    assert.equal(decodes, 1, "the newest is kept, the oldest decoded again");
  });
});

describe("binds check node capacity from the pods stored on the node", () => {
  let s: MemoryRegistry;
  before(async () => {
    s = await startMemoryRegistry();
    const n = unwrap(await s.client.create(fromKubeJson({ apiVersion: "v1", kind: "Node", metadata: { name: "small" } })));
    const meta = { name: "small", resourceVersion: n.metadata?.resourceVersion };
    await s.client.updateStatus(fromKubeJson({ apiVersion: "v1", kind: "Node", metadata: meta, status: { allocatable: { cpu: "1", pods: "110" } } }));
  });
  const create = (name: string, cpu: string) =>
    s.client.create(testPod(name, { spec: { containers: [{ name: "c", image: "i", resources: { requests: { cpu } } }] } }));
  const refused = (err: unknown) => err instanceof ApiError && err.code === 409 && /Insufficient cpu/.test(err.message);
  const setPhase = async (name: string, phase: string) => {
    const p = unwrap(await s.client.get("pods", "default", name)) as Pod;
    p.status!.phase = phase;
    await s.client.updateStatus(fromKubeJson(toKubeJson({ kind: { $case: "pod", value: p } })));
  };
  const bindAll = async (names: string[]) => {
    const r = await Promise.allSettled(names.map((n) => s.client.bind("default", n, "small")));
    for (const x of r) if (x.status === "rejected") assert.ok(refused(x.reason), String(x.reason));
    return names.filter((_, i) => r[i]!.status === "fulfilled");
  };

  it("stays right across concurrent binds, status writes, terminations and deletions", async () => {
    for (let i = 0; i < 8; i++) await create(`c${i}`, "300m");
    const won = await bindAll(["c0", "c1", "c2", "c3", "c4"]);
    assert.equal(won.length, 3, "1 cpu holds three 300m pods, concurrent binds or not");
    const lost = ["c0", "c1", "c2", "c3", "c4"].filter((n) => !won.includes(n));
    assert.deepEqual(await bindAll(lost), [], "still full: the losers are refused again");

    // A status write makes a new version of a bound pod; its share stays.
    await setPhase(won[0]!, "Running");
    assert.deepEqual(await bindAll([lost[0]!]), [], "a running pod still holds its share");

    // Terminated: its share is free.
    await setPhase(won[0]!, "Succeeded");
    assert.equal((await bindAll([lost[0]!, lost[1]!])).length, 1, "one freed share, one bind");

    // Deleted (at once): its share is free.
    await s.client.delete("pods", "default", won[1]!, { gracePeriodSeconds: 0 });
    await assert.rejects(s.client.get("pods", "default", won[1]!));
    const again = await bindAll(["c5", "c6"]);
    assert.equal(again.length, 1, "one deleted pod, one bind");
    const onNode = await s.client.list("pods", { fieldSelector: "spec.nodeName=small" });
    const running = onNode.items.map((o) => unwrap(o) as Pod).filter((p) => p.status?.phase !== "Succeeded");
    assert.equal(running.length, 3, "never more than three 300m pods on 1 cpu");
  });
});
