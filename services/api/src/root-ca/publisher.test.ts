import assert from "node:assert/strict";
import { after, before, describe, it } from "node:test";
import { toKubeJson } from "@choreo/kit/kube-json";
import { silentLogger } from "@choreo/kit/log";
import { waitFor } from "@choreo/kit/testing";
import { fromKubeJson } from "@choreo/kit/kube-json";
import { MemoryHandlers } from "../http/testing/memory-handlers.js";
import { ROOT_CA_CONFIGMAP, RootCaPublisher } from "./publisher.js";

// The publisher against in-memory handlers with real watches: every namespace
// gets kube-root-ca.crt, a new one too, a deleted map comes back and a
// changed one is restored; a terminating namespace gets none; a namespace
// whose sync failed (the store away) is tried again until it has its map.

const PEM = "-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n";

describe("RootCaPublisher", () => {
  const h = new MemoryHandlers();
  const ac = new AbortController();
  let running: Promise<void>;
  // While `storeAway`, the publisher's reads fail as with Redis down (the namespaces are made through `h` directly).
  let storeAway = false;
  let failedReads = 0;
  const away = <T>(fn: () => Promise<T>): Promise<T> => {
    if (!storeAway) return fn();
    failedReads++;
    return Promise.reject(new Error("Reached the max retries per request limit (which is 3)"));
  };
  const handlers = {
    get: (r: Parameters<MemoryHandlers["get"]>[0]) => away(() => h.get(r)),
    create: (r: Parameters<MemoryHandlers["create"]>[0]) => away(() => h.create(r)),
    update: (r: Parameters<MemoryHandlers["update"]>[0]) => away(() => h.update(r)),
    watch: (r: Parameters<MemoryHandlers["watch"]>[0], signal: AbortSignal) => h.watch(r, signal),
  };
  before(() => {
    for (const name of ["default", "kube-system"]) h.seed({ apiVersion: "v1", kind: "Namespace", metadata: { name } });
    h.seed({ apiVersion: "v1", kind: "Namespace", metadata: { name: "leaving" }, status: { phase: "Terminating" } });
    running = new RootCaPublisher({ handlers, caPem: PEM, log: silentLogger(), retryMs: 50 }).start(ac.signal);
  });
  after(async () => {
    ac.abort();
    await running;
  });

  const caOf = async (namespace: string): Promise<string | undefined> => {
    try {
      const cm = toKubeJson(await h.get({ resource: "configmaps", namespace, name: ROOT_CA_CONFIGMAP }));
      return (cm["data"] as Record<string, string> | undefined)?.["ca.crt"];
    } catch {
      return undefined;
    }
  };
  const has = (ns: string) => async () => ((await caOf(ns)) === PEM ? true : undefined);

  it("puts the CA in every namespace, and in a new one", async () => {
    await waitFor(has("default"), { timeoutMs: 30_000 });
    await waitFor(has("kube-system"), { timeoutMs: 30_000 });
    await h.create({ object: fromKubeJson({ apiVersion: "v1", kind: "Namespace", metadata: { name: "apps" } }), dryRun: false });
    await waitFor(has("apps"), { timeoutMs: 30_000 });
    const cm = toKubeJson(await h.get({ resource: "configmaps", namespace: "apps", name: ROOT_CA_CONFIGMAP }));
    assert.match(String((cm["metadata"] as { annotations: Record<string, string> }).annotations["kubernetes.io/description"]), /verify the kube-apiserver/);
  });

  it("re-creates a deleted map and restores a changed one", async () => {
    await waitFor(has("default"), { timeoutMs: 30_000 });
    await h.delete({ resource: "configmaps", namespace: "default", name: ROOT_CA_CONFIGMAP, options: undefined });
    await waitFor(has("default"), { timeoutMs: 30_000 });
    const cm = toKubeJson(await h.get({ resource: "configmaps", namespace: "default", name: ROOT_CA_CONFIGMAP }));
    await h.update({ object: fromKubeJson({ ...cm, data: { "ca.crt": "forged", extra: "x" } }), dryRun: false });
    await waitFor(
      async () => {
        const now = toKubeJson(await h.get({ resource: "configmaps", namespace: "default", name: ROOT_CA_CONFIGMAP }));
        return JSON.stringify(now["data"]) === JSON.stringify({ "ca.crt": PEM }) ? true : undefined;
      },
      { timeoutMs: 30_000 },
    );
  });

  it("leaves a terminating namespace alone", async () => {
    await waitFor(has("apps"), { timeoutMs: 30_000 });
    // Every namespace was seen before apps was created; leaving got nothing.
    assert.equal(await caOf("leaving"), undefined);
  });

  it("tries again a namespace whose sync failed, once the store is back", async () => {
    storeAway = true;
    await h.create({ object: fromKubeJson({ apiVersion: "v1", kind: "Namespace", metadata: { name: "blip" } }), dryRun: false });
    await waitFor(() => failedReads >= 2, { timeoutMs: 30_000, message: "the publisher tried, and tried again" });
    storeAway = false;
    await waitFor(has("blip"), { timeoutMs: 30_000, message: "kube-root-ca.crt in blip once the store is back" });
  });
});
