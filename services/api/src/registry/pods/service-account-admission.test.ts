import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { fromKubeJson, toKubeJson } from "@choreo/kit/kube-json";
import { silentLogger } from "@choreo/kit/log";
import { bootstrap, createRegistry } from "../index.js";
import { MemoryStore } from "../../storage/memory-store.js";
import { LocalClient } from "../../testing/memory-registry.js";
import { rejects } from "../../testing/api-assert.js";
import { notFound } from "@choreo/kit";
import { admitServiceAccount, type ServiceAccountLookup } from "./service-account-admission.js";

// ServiceAccount admission through a registry that has it on: defaults,
// the 403 of a missing account, the injected projected volume and mounts,
// and automountServiceAccountToken on the pod and on the account.

type J = Record<string, unknown>;
interface PodJson {
  metadata: { name: string };
  spec: {
    serviceAccountName: string;
    serviceAccount: string;
    volumes?: { name: string; projected?: { defaultMode: number; sources: J[] } }[];
    containers: { name: string; volumeMounts?: { name: string; mountPath: string; readOnly?: boolean }[] }[];
    initContainers?: { name: string; volumeMounts?: { name: string; mountPath: string; readOnly?: boolean }[] }[];
  };
}

async function start(): Promise<LocalClient> {
  const registry = createRegistry({ store: new MemoryStore(), serviceCidr: "10.96.0.0/16", log: silentLogger(), serviceAccountAdmission: true });
  await bootstrap(registry);
  const client = new LocalClient(registry);
  for (const [name, extra] of [
    ["default", {}],
    ["robot", {}],
    ["quiet", { automountServiceAccountToken: false }],
  ] as const)
    await client.create(fromKubeJson({ apiVersion: "v1", kind: "ServiceAccount", metadata: { name, namespace: "default" }, ...extra }));
  return client;
}

const pod = (name: string, spec: J = {}): J => ({
  apiVersion: "v1",
  kind: "Pod",
  metadata: { name, namespace: "default" },
  spec: { containers: [{ name: "c", image: "busybox" }], ...spec },
});

const create = async (c: LocalClient, p: J): Promise<PodJson> => toKubeJson(await c.create(fromKubeJson(p))) as unknown as PodJson;

// The projected serviceAccountToken source is still refused by validation
// (unenforced.ts) until the node agents write tokens; the volume's injection
// is tested on the admission function itself, with a fake account lookup.
const FIXED = "kube-api-access-bcd24";
function lookupOf(accounts: Record<string, J>): ServiceAccountLookup {
  return {
    defaultAttempts: 2,
    retryMs: 1,
    get: (req) => {
      const sa = accounts[req.name];
      if (!sa) return Promise.reject(notFound("serviceaccounts", req.name));
      return Promise.resolve(fromKubeJson({ apiVersion: "v1", kind: "ServiceAccount", metadata: { name: req.name, namespace: req.namespace }, ...sa }));
    },
  };
}
const admitted = async (spec: J, accounts: Record<string, J> = { default: {} }): Promise<PodJson> => {
  const o = fromKubeJson(pod("p", spec));
  if (o.kind?.$case !== "pod") throw new Error("not a pod");
  await admitServiceAccount(lookupOf(accounts), o.kind.value, (prefix) => `${prefix}bcd24`);
  return toKubeJson(o) as unknown as PodJson;
};

describe("ServiceAccount admission", () => {
  it("runs a pod as `default` and mounts the API access volume in every container and init container", async () => {
    const p = await admitted({
      initContainers: [{ name: "i", image: "busybox" }],
      containers: [
        { name: "a", image: "busybox" },
        { name: "b", image: "busybox" },
      ],
    });
    assert.equal(p.spec.serviceAccountName, "default");
    assert.equal(p.spec.serviceAccount, "default");
    assert.deepEqual(p.spec.volumes, [
      {
        name: FIXED,
        projected: {
          defaultMode: 420,
          sources: [
            { serviceAccountToken: { expirationSeconds: 3607, path: "token" } },
            { configMap: { name: "kube-root-ca.crt", items: [{ key: "ca.crt", path: "ca.crt" }] } },
            { downwardAPI: { items: [{ path: "namespace", fieldRef: { apiVersion: "v1", fieldPath: "metadata.namespace" } }] } },
          ],
        },
      },
    ]);
    for (const ctr of [...(p.spec.initContainers ?? []), ...p.spec.containers])
      assert.deepEqual(ctr.volumeMounts, [{ name: FIXED, readOnly: true, mountPath: "/var/run/secrets/kubernetes.io/serviceaccount" }]);
  });

  it("mounts nothing when the pod or (the pod silent) its account says no, and keeps a container's own mount at the path", async () => {
    const accounts = { default: {}, quiet: { automountServiceAccountToken: false } };
    assert.equal((await admitted({ automountServiceAccountToken: false }, accounts)).spec.volumes, undefined);
    assert.equal((await admitted({ serviceAccountName: "quiet" }, accounts)).spec.volumes, undefined);
    assert.equal((await admitted({ serviceAccountName: "quiet", automountServiceAccountToken: true }, accounts)).spec.volumes?.length, 1);
    const own = await admitted({
      volumes: [{ name: "mine", emptyDir: {} }],
      containers: [
        { name: "a", image: "busybox", volumeMounts: [{ name: "mine", mountPath: "/var/run/secrets/kubernetes.io/serviceaccount" }] },
        { name: "b", image: "busybox" },
      ],
    });
    assert.deepEqual(
      own.spec.containers[0]?.volumeMounts?.map((m) => m.name),
      ["mine"],
    );
    assert.equal(own.spec.containers[1]?.volumeMounts?.[0]?.name, FIXED);
    assert.deepEqual(
      own.spec.volumes?.map((v) => v.name),
      ["mine", FIXED],
    );
    // A volume already named kube-api-access-*: reused, not added twice.
    const again = await admitted({ volumes: [{ name: "kube-api-access-zzzzz", emptyDir: {} }] });
    assert.deepEqual(
      again.spec.volumes?.map((v) => v.name),
      ["kube-api-access-zzzzz"],
    );
    assert.equal(again.spec.containers[0]?.volumeMounts?.[0]?.name, "kube-api-access-zzzzz");
  });

  it("through a registry with it on: the account defaulted and mirrored, a missing one the apiserver's 403 with nothing stored", async () => {
    const c = await start();
    const p = await create(c, pod("old", { serviceAccount: "robot", automountServiceAccountToken: false }));
    assert.equal(p.spec.serviceAccountName, "robot");
    assert.equal(p.spec.serviceAccount, "robot");
    const d = await create(c, pod("plain", { serviceAccountName: "quiet" }));
    assert.equal(d.spec.serviceAccount, "quiet");
    assert.equal(d.spec.volumes, undefined);
    await rejects(
      c.create(fromKubeJson(pod("ghostly", { serviceAccountName: "ghost" }))),
      403,
      "Forbidden",
      /pods "ghostly" is forbidden: error looking up service account default\/ghost: serviceaccount "ghost" not found/,
    );
    await rejects(c.get("pods", "default", "ghostly"), 404, "NotFound");
  });
});
