// NodeRestriction on a node's own Node, through the memory registry's
// admission: a node's user sets no node-restriction.kubernetes.io/ label
// and changes no taint; an administrator may; what the agent writes passes.
import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { ApiError, unwrap, wrap } from "@choreo/kit";
import { fromKubeJson } from "@choreo/kit/kube-json";
import { silentLogger } from "@choreo/kit/log";
import type { Node } from "@choreo/kit/gen/choreo/core/v1/core";
import { createRegistry } from "../../registry/index.js";
import { admissionScope } from "../../registry/generic/admission-context.js";
import type { RequestScope } from "../../registry/generic/request-scope.js";
import { MemoryStore } from "../../storage/memory-store.js";
import type { UserInfo } from "../types.js";
import { nodeWriteRefusal } from "./node-restriction.js";

const node1: UserInfo = { name: "system:node:node-1", uid: "n1", groups: ["system:nodes", "system:authenticated"], extra: {} };
const admin: UserInfo = { name: "admin", uid: "a", groups: ["system:masters"], extra: {} };

function node(labels: Record<string, string>, taints: { key: string; effect: string }[] = []): Node {
  return unwrap(fromKubeJson({ apiVersion: "v1", kind: "Node", metadata: { name: "node-1", labels }, spec: { taints } })) as Node;
}

describe("nodeWriteRefusal", () => {
  it("refuses node-restriction.kubernetes.io/ labels (and subdomains) and taint changes, in Kubernetes' words", () => {
    assert.equal(
      nodeWriteRefusal("node-1", node({ "node-restriction.kubernetes.io/pci": "yes", "x.node-restriction.kubernetes.io/b": "1" })),
      'node "node-1" is not allowed to set the following labels: node-restriction.kubernetes.io/pci, x.node-restriction.kubernetes.io/b',
    );
    const old = node({ "node-restriction.kubernetes.io/pci": "yes", a: "1" }, [{ key: "k", effect: "NoSchedule" }]);
    assert.equal(
      nodeWriteRefusal("node-1", node({ a: "1" }, [{ key: "k", effect: "NoSchedule" }]), old),
      "is not allowed to modify labels: node-restriction.kubernetes.io/pci",
    );
    assert.equal(nodeWriteRefusal("node-1", node({ ...old.metadata!.labels }), old), 'node "node-1" is not allowed to modify taints');
    assert.equal(nodeWriteRefusal("node-1", node({ ...old.metadata!.labels, b: "2" }, [{ key: "k", effect: "NoSchedule" }]), old), undefined);
    assert.equal(
      nodeWriteRefusal("node-1", node({ "kubernetes.io/hostname": "node-1" }, [{ key: "k", effect: "NoSchedule" }])),
      undefined,
      "a new node may register with taints",
    );
    assert.equal(nodeWriteRefusal("node-1", node({ "my-node-restriction.kubernetes.io/x": "1" })), undefined, "only the domain and its subdomains");
  });
});

describe("withNodeRestriction in the registry", () => {
  it("a node's update that adds a restricted label or drops a taint is 403 and stores nothing; the agent's own label update and an admin's taint pass", async () => {
    const r = createRegistry({ store: new MemoryStore(), serviceCidr: "10.96.0.0/16", log: silentLogger() });
    const asUser = <T>(user: UserInfo, fn: (scope: RequestScope) => Promise<T>): Promise<T> =>
      fn(admissionScope({ user: user.name, userInfo: user, warn: () => undefined }));
    const created = unwrap(
      await asUser(node1, (scope) => r.create({ dryRun: false, object: wrap("node", node({ "kubernetes.io/hostname": "node-1" })) }, scope)),
    ) as Node;
    const tainted = unwrap(
      await asUser(admin, (scope) =>
        r.update(
          {
            dryRun: false,
            object: wrap("node", { ...created, spec: { ...created.spec!, taints: [{ key: "dedicated", value: "", effect: "NoSchedule", timeAdded: "" }] } }),
          },
          scope,
        ),
      ),
    ) as Node;
    const refused = async (n: Node, want: RegExp): Promise<void> => {
      const err = await asUser(node1, (scope) => r.update({ dryRun: false, object: wrap("node", n) }, scope)).then(
        () => assert.fail("expected 403"),
        (e: unknown) => e,
      );
      assert.ok(err instanceof ApiError);
      assert.equal(err.code, 403);
      assert.match(err.message, want);
    };
    await refused(
      { ...tainted, metadata: { ...tainted.metadata!, labels: { ...tainted.metadata!.labels, "node-restriction.kubernetes.io/pci": "yes" } } },
      /^nodes "node-1" is forbidden: is not allowed to modify labels: node-restriction.kubernetes.io\/pci$/,
    );
    await refused({ ...tainted, spec: { ...tainted.spec!, taints: [] } }, /node "node-1" is not allowed to modify taints/);
    const now = unwrap(await r.get({ resource: "nodes", namespace: "", name: "node-1" })) as Node;
    assert.equal(now.metadata?.resourceVersion, tainted.metadata?.resourceVersion, "nothing changed");
    const relabelled = unwrap(
      await asUser(node1, (scope) =>
        r.update(
          {
            dryRun: false,
            object: wrap("node", { ...now, metadata: { ...now.metadata!, labels: { ...now.metadata!.labels, "choreo.dev/runtime": "process" } } }),
          },
          scope,
        ),
      ),
    ) as Node;
    assert.equal(relabelled.metadata?.labels["choreo.dev/runtime"], "process");
    assert.equal(relabelled.spec?.taints.length, 1);
  });
});
