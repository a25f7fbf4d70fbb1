// test-tier: servers
// The informer's transform on a real nats-server event stream (list from a
// stand-in api client): what the cache, the indexes and the handlers see is
// the transformed object — listed, added, updated and deleted — while
// selectors still match the whole object; and stripPod keeps what the
// scheduler, replication and endpoints actors read and drops the rest.
import assert from "node:assert/strict";
import { after, before, describe, it } from "node:test";
import type { NatsConnection } from "@nats-io/transport-node";
import { jetstream, type JetStreamManager } from "@nats-io/jetstream";
import { emptyMeta, wrap } from "../api/kinds.js";
import { encodeEvent } from "../bus/events.js";
import { connectBus, ensureEventStream } from "../bus/stream.js";
import { eventSubject } from "../bus/subjects.js";
import type { ApiClient } from "../client/index.js";
import { WatchEvent, type ObjectList } from "../gen/choreo/api/v1/api.js";
import { Pod } from "../gen/choreo/core/v1/core.js";
import { fromKubeJson } from "../kube-json/index.js";
import { silentLogger } from "../log/index.js";
import { startNats, type ServerHandle } from "../process/servers.js";
import { waitFor } from "../process/process.js";
import { Informer } from "./informer.js";
import { Interner, sharePod, stripPod, withoutManagedFields, type Transform } from "./transform.js";

/** A pod as kubectl applies it: managedFields, last-applied and other annotations, env, probes, mounts, a volume. */
function fullPod(name: string, labels: Record<string, string>, extra: { node?: string; image?: string } = {}): Pod {
  const o = fromKubeJson({
    apiVersion: "v1",
    kind: "Pod",
    metadata: {
      name,
      namespace: "default",
      uid: `uid-${name}`,
      labels,
      annotations: { "kubectl.kubernetes.io/last-applied-configuration": '{"big":"json"}', "batch.kubernetes.io/job-completion-index": "3" },
      managedFields: [
        { manager: "kubectl", operation: "Update", apiVersion: "v1", time: "2026-11-27T05:00:00Z", fieldsType: "FieldsV1", fieldsV1: { "f:spec": {} } },
      ],
      ownerReferences: [{ apiVersion: "v1", kind: "ReplicationController", name: "rc", uid: "rc-uid", controller: true }],
    },
    spec: {
      nodeName: extra.node ?? "",
      tolerations: [{ key: "node.kubernetes.io/unreachable", operator: "Exists", effect: "NoExecute", tolerationSeconds: 300 }],
      nodeSelector: { disk: "ssd" },
      containers: [
        {
          name: "web",
          image: extra.image ?? "nginx:1.27",
          command: ["/srv"],
          args: ["--port=8080"],
          env: [{ name: "A", value: "1" }],
          ports: [{ name: "http", containerPort: 8080, hostPort: 80, protocol: "TCP" }],
          resources: { requests: { cpu: "100m", memory: "64Mi" } },
          volumeMounts: [{ name: "data", mountPath: "/data" }],
          readinessProbe: { httpGet: { path: "/ready", port: 8080 } },
        },
      ],
      volumes: [{ name: "data", emptyDir: {} }],
    },
    status: {
      phase: "Running",
      podIP: "10.0.0.7",
      conditions: [{ type: "Ready", status: "True", lastTransitionTime: "2026-11-27T05:00:00Z" }],
      containerStatuses: [{ name: "web", ready: true, restartCount: 2, image: "nginx:1.27", imageID: "sha256:abc", containerID: "hollow://x" }],
    },
  });
  return (o.kind as { value: Pod }).value;
}

describe("Informer transform", () => {
  let nats: ServerHandle;
  let nc: NatsConnection;
  let jsm: JetStreamManager;
  let revision = 0;
  const ac = new AbortController();

  /** Publishes a pod change as the api's relay does (stream sequence == revision, == the object's resourceVersion). */
  async function publish(type: "ADDED" | "MODIFIED" | "DELETED", pod: Pod): Promise<void> {
    const m = pod.metadata!;
    const next = structuredClone(pod);
    next.metadata!.resourceVersion = String(revision + 1);
    await jetstream(nc).publish(
      eventSubject("pods", m.namespace, m.name, pod.spec?.nodeName ?? ""),
      encodeEvent(WatchEvent.fromPartial({ type, revision: revision + 1, object: wrap("pod", next) })),
      {
        expect: { lastSequence: revision },
      },
    );
    revision++;
  }

  /** An api client whose list answers `pods` at the current revision (the rest of the client is never called). */
  const lister = (pods: Pod[]): ApiClient =>
    ({
      list: (): Promise<ObjectList> =>
        Promise.resolve({
          items: pods.map((p) => wrap("pod", structuredClone(p))),
          metadata: { resourceVersion: String(revision), continue: "", remainingItemCount: undefined },
        }),
    }) as unknown as ApiClient;

  before(async () => {
    nats = await startNats();
    nc = await connectBus(nats.url, "informer-test");
    jsm = await ensureEventStream(nc);
  });
  after(async () => {
    ac.abort();
    await nc?.close();
    await nats?.stop();
  });

  it("stores, indexes and hands out the transformed object: listed, added, updated, deleted", async () => {
    const transform = stripPod({ annotations: ["batch.kubernetes.io/job-completion-index"] });
    const seen: string[] = [];
    // The transform sees each object once per change; the indexer sees only what it returned.
    const counted: Transform<Pod> = (p) => {
      seen.push(`${p.metadata?.name}@${p.metadata?.resourceVersion}`);
      return transform(p);
    };
    const listed = fullPod("listed", { app: "a" }, { node: "n1" });
    listed.metadata!.resourceVersion = "0";
    const informer = new Informer({ client: lister([listed]), nc, jsm, kind: "pod", transform: counted, log: silentLogger() });
    const indexed: Pod[] = [];
    informer.addIndexer("app", (p) => {
      indexed.push(p);
      return [p.metadata?.labels["app"] ?? ""];
    });
    const events: { type: string; old?: Pod; obj: Pod }[] = [];
    informer.addEventHandler({
      onAdd: (obj) => events.push({ type: "add", obj }),
      onUpdate: (old, obj) => events.push({ type: "update", old, obj }),
      onDelete: (obj) => events.push({ type: "delete", obj }),
    });
    const running = informer.start(ac.signal);
    await informer.waitForSync();

    const stripped = (p: Pod | undefined, why: string) => {
      assert.ok(p, why);
      assert.deepEqual(p.metadata?.managedFields, [], `${why}: managedFields`);
      assert.deepEqual(p.metadata?.annotations, { "batch.kubernetes.io/job-completion-index": "3" }, `${why}: annotations`);
      const c = p.spec?.containers[0];
      assert.deepEqual([c?.command, c?.args, c?.env, c?.volumeMounts, c?.readinessProbe], [[], [], [], [], undefined], `${why}: container`);
      assert.deepEqual(p.spec?.volumes, [], `${why}: volumes`);
    };
    stripped(informer.get("default/listed"), "listed");

    await publish("ADDED", fullPod("w", { app: "a" }));
    await waitFor(() => informer.get("default/w"), { message: "added pod cached" });
    stripped(informer.get("default/w"), "added");
    await publish("MODIFIED", fullPod("w", { app: "b" }, { node: "n2", image: "nginx:1.28" }));
    await waitFor(() => informer.get("default/w")?.spec?.nodeName === "n2", { message: "update cached" });
    stripped(informer.get("default/w"), "updated");
    assert.equal(informer.get("default/w")?.spec?.containers[0]?.image, "nginx:1.28");
    assert.deepEqual(
      informer.byIndex("app", "b").map((p) => p.metadata?.name),
      ["w"],
    );
    assert.deepEqual(
      informer.byIndex("app", "a").map((p) => p.metadata?.name),
      ["listed"],
    );
    // An update that leaves the index value as it was (app=b): still found under it, and only there.
    await publish("MODIFIED", fullPod("w", { app: "b" }, { node: "n3", image: "nginx:1.28" }));
    await waitFor(() => informer.get("default/w")?.spec?.nodeName === "n3", { message: "second update cached" });
    assert.deepEqual(
      informer.byIndex("app", "b").map((p) => `${p.metadata?.name}@${p.spec?.nodeName}`),
      ["w@n3"],
    );
    assert.deepEqual(
      informer.byIndex("app", "a").map((p) => p.metadata?.name),
      ["listed"],
    );
    await publish("DELETED", fullPod("w", { app: "b" }, { node: "n3" }));
    await waitFor(() => informer.get("default/w") === undefined, { message: "deleted" });
    assert.deepEqual(informer.byIndex("app", "b"), []);

    // Every object the handlers and the indexer saw was a transformed one.
    assert.deepEqual(
      events.map((e) => `${e.type} ${e.obj.metadata?.name}`),
      ["add listed", "add w", "update w", "update w", "delete w"],
    );
    for (const e of events) {
      stripped(e.obj, `${e.type} handler`);
      if (e.old) stripped(e.old, `${e.type} handler's old`);
    }
    // add listed, add w, update w ×2 (old and new read), delete w (old out).
    assert.equal(indexed.length, 7);
    for (const p of indexed) stripped(p, "indexer");
    assert.deepEqual(seen, ["listed@0", `w@${revision - 3}`, `w@${revision - 2}`, `w@${revision - 1}`, `w@${revision}`]);
    ac.abort();
    await running;
  });

  it("selectors match the whole object, not the transformed one", async () => {
    const ac2 = new AbortController();
    // A transform that drops every label: the label selector must still see them.
    const noLabels: Transform<Pod> = (p) => ({ ...p, metadata: { ...(p.metadata ?? emptyMeta()), labels: {} } });
    const informer = new Informer({ client: lister([]), nc, jsm, kind: "pod", labelSelector: "team=x", transform: noLabels, log: silentLogger() });
    const running = informer.start(ac2.signal);
    try {
      await informer.waitForSync();
      await publish("ADDED", fullPod("sel-1", { team: "x" }));
      await publish("ADDED", fullPod("sel-2", { team: "y" }));
      await publish("ADDED", fullPod("sel-3", { team: "x" }));
      await waitFor(() => informer.get("default/sel-3"), { message: "selected pods cached" });
      assert.deepEqual(informer.keys().sort(), ["default/sel-1", "default/sel-3"]);
      assert.deepEqual(informer.get("default/sel-1")?.metadata?.labels, {});
      // It stops matching (label changed): out of the cache.
      await publish("MODIFIED", fullPod("sel-1", { team: "y" }));
      await waitFor(() => informer.get("default/sel-1") === undefined, { message: "no longer selected" });
    } finally {
      ac2.abort();
      await running;
    }
  });
});

describe("stripPod", () => {
  it("keeps what the scheduler, replication and endpoints actors read; drops the rest; leaves its input alone", () => {
    const whole = fullPod("p", { app: "a" }, { node: "n1" });
    whole.metadata!.deletionTimestamp = "2026-11-27T05:01:00Z";
    whole.spec!.priority = 7;
    whole.spec!.initContainers = [{ ...structuredClone(whole.spec!.containers[0]!), name: "init", restartPolicy: "Always" }];
    const before = structuredClone(whole);
    const p = stripPod({ annotations: ["batch.kubernetes.io/job-completion-index"] })(whole);
    assert.deepEqual(whole, before, "the input is not changed");

    // metadata: all but managedFields and unnamed annotations.
    const { managedFields, annotations, ...meta } = p.metadata!;
    const { managedFields: _m, annotations: _a, ...wholeMeta } = whole.metadata!;
    assert.deepEqual(meta, wholeMeta);
    assert.deepEqual(managedFields, []);
    assert.deepEqual(annotations, { "batch.kubernetes.io/job-completion-index": "3" });
    // spec: scheduling facts, ports and requests kept.
    const s = p.spec!;
    assert.deepEqual([s.nodeName, s.priority, s.nodeSelector, s.tolerations], ["n1", 7, { disk: "ssd" }, whole.spec!.tolerations]);
    for (const [c, w] of [
      [s.containers[0]!, whole.spec!.containers[0]!],
      [s.initContainers[0]!, whole.spec!.initContainers[0]!],
    ] as const) {
      assert.deepEqual([c.name, c.image, c.ports, c.resources, c.restartPolicy], [w.name, w.image, w.ports, w.resources, w.restartPolicy]);
      assert.deepEqual([c.command, c.args, c.env, c.volumeMounts, c.readinessProbe], [[], [], [], [], undefined]);
    }
    // status: phase, IP, conditions, restarts kept.
    assert.deepEqual([p.status!.phase, p.status!.podIp, p.status!.conditions], [whole.status!.phase, whole.status!.podIp, whole.status!.conditions]);
    assert.deepEqual([p.status!.containerStatuses[0]!.restartCount, p.status!.containerStatuses[0]!.ready], [2, true]);
    assert.equal(p.status!.containerStatuses[0]!.imageId, "");
    // Idempotent.
    assert.deepEqual(stripPod({ annotations: ["batch.kubernetes.io/job-completion-index"] })(p), p);
  });

  it("given the object as its own, changes it in place into the same pod the copy gives", () => {
    for (const opts of [{}, { annotations: ["batch.kubernetes.io/job-completion-index"] }]) {
      const whole = fullPod("p", { app: "a" }, { node: "n1" });
      whole.spec!.initContainers = [{ ...structuredClone(whole.spec!.containers[0]!), name: "init", restartPolicy: "Always" }];
      whole.status!.hostIps = [{ ip: "10.0.0.7" }];
      // Decoded, as the informer gets it.
      const decoded = Pod.decode(Pod.encode(whole).finish());
      const copied = stripPod(opts)(decoded);
      const before = structuredClone(decoded);
      const owned = structuredClone(decoded);
      const inPlace = stripPod(opts)(owned, true);
      assert.equal(inPlace, owned, "the same object, changed");
      assert.deepStrictEqual(inPlace, copied);
      assert.equal(JSON.stringify(inPlace), JSON.stringify(copied), "the same fields in the same order");
      assert.deepEqual(decoded, before, "the copy leaves its input alone");
      assert.throws(() => inPlace.metadata!.managedFields.push({} as never), TypeError, "the shared frozen empty list");
    }
    const m = fullPod("m", {});
    assert.equal(withoutManagedFields(m, true), m);
    assert.deepEqual(m.metadata!.managedFields, []);
  });

  it("shares one frozen empty list: changing a cached pod in place throws instead of changing every pod", () => {
    const [a, b] = [stripPod()(fullPod("a", {})), stripPod()(fullPod("b", {}))];
    assert.equal(a.metadata!.managedFields, b.metadata!.managedFields);
    assert.throws(() => a.metadata!.finalizers.push("x"), TypeError);
    assert.deepEqual(b.metadata!.finalizers, []);
  });

  it("withoutManagedFields drops managedFields only", () => {
    const whole = fullPod("m", { app: "a" });
    const p = withoutManagedFields(whole);
    assert.deepEqual(p.metadata?.managedFields, []);
    assert.deepEqual({ ...p, metadata: { ...p.metadata!, managedFields: [] } }, { ...whole, metadata: { ...whole.metadata!, managedFields: [] } });
    assert.equal(whole.metadata!.managedFields.length, 1);
  });
});

describe("sharePod", () => {
  /** `p` without managedFields, encoded: what sharePod must keep byte for byte. */
  const bytesWithout = (p: Pod): string => Buffer.from(Pod.encode({ ...p, metadata: { ...p.metadata!, managedFields: [] } }).finish()).toString("hex");

  it("keeps every field and value but managedFields, whether it copies or changes in place", () => {
    const whole = fullPod("p", { app: "a" }, { node: "n1" });
    whole.spec!.initContainers = [{ ...structuredClone(whole.spec!.containers[0]!), name: "init", restartPolicy: "Always" }];
    whole.status!.hostIps = [{ ip: "10.0.0.7" }];
    const decoded = Pod.decode(Pod.encode(whole).finish());
    const want = bytesWithout(decoded);
    const before = structuredClone(decoded);
    const copied = sharePod()(decoded);
    assert.notEqual(copied, decoded);
    assert.deepEqual(decoded, before, "the copy leaves its input alone");
    assert.equal(bytesWithout(copied), want);
    assert.deepEqual(copied.metadata!.managedFields, []);
    const owned = structuredClone(decoded);
    const inPlace = sharePod()(owned, true);
    assert.equal(inPlace, owned, "the same object, changed");
    assert.equal(bytesWithout(inPlace), want);
    assert.deepEqual(inPlace, copied);
    // Env, probes, mounts and volumes are kept (the node agent runs the pod).
    assert.deepEqual(inPlace.spec!.containers[0]!.env, [{ name: "A", value: "1", valueFrom: undefined }]);
    assert.equal(inPlace.spec!.containers[0]!.readinessProbe?.httpGet?.path, "/ready");
    assert.equal(inPlace.spec!.volumes[0]!.name, "data");
  });

  it("returns a pod it made as it is (the owner's own write, passed through it first); empty lists are one frozen list", () => {
    const t = sharePod();
    const a = t(fullPod("a", {}), true);
    assert.equal(t(a), a, "not copied again");
    const b = t(fullPod("b", {}), true);
    assert.equal(a.metadata!.finalizers, b.metadata!.finalizers);
    assert.throws(() => a.metadata!.finalizers.push("x"), TypeError);
    assert.deepEqual(b.metadata!.finalizers, []);
  });

  it("shares the strings that repeat, not names, uids, IPs or timestamps (the interner stays as small as the pods' common values)", () => {
    const interner = new Interner();
    const t = sharePod(interner);
    t(fullPod("p-0", { app: "a" }, { node: "n1" }), true);
    const common = interner.size;
    assert.ok(common > 10, `shared strings: ${common}`);
    for (let i = 1; i < 200; i++) {
      const p = fullPod(`p-${i}`, { app: "a" }, { node: "n1" });
      p.metadata!.uid = `uid-${i}`;
      p.status!.podIp = `10.0.${i >> 8}.${i & 255}`;
      p.status!.startTime = `2026-11-27T05:${String(i % 60).padStart(2, "0")}:00Z`;
      t(p, true);
    }
    assert.equal(interner.size, common);
  });
});
