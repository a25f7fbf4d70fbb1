import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { Pod, type Container, type Volume } from "@choreo/kit/gen/choreo/core/v1/core";
import { containerEnv } from "../runtime/pod-spec.js";
import { ConfigError, DEFAULT_MODE, downwardField, resolvePod, resourceValue, volumePayload, type Lookup, type SourceData } from "./resolve.js";

const te = new TextEncoder();
const td = new TextDecoder();
const data = (o: Record<string, string>, binary: Record<string, Uint8Array> = {}): SourceData => ({
  strings: new Map(Object.entries(o)),
  files: new Map([...Object.entries(o).map(([k, v]): [string, Uint8Array] => [k, te.encode(v)]), ...Object.entries(binary)]),
});
/** An in-memory namespace (a fake lookup: pure logic under test). */
const lookup = (cms: Record<string, SourceData>, secrets: Record<string, SourceData> = {}): Lookup => ({
  configMap: (n) => Promise.resolve(cms[n]),
  secret: (n) => Promise.resolve(secrets[n]),
});
const alloc = { cpu: "4", memory: "16Gi" };
const pod = (containers: Partial<Container>[], volumes: Partial<Volume>[] = [], labels: Record<string, string> = {}): Pod =>
  Pod.fromPartial({
    metadata: { name: "p", namespace: "ns", uid: "u1", labels },
    spec: { containers: containers.map((c) => ({ name: "app", image: "i", ...c })), volumes },
  });
const envOf = async (p: Pod, l: Lookup): Promise<Map<string, string>> => {
  const r = await resolvePod(p, l, alloc);
  return containerEnv(r.pod, r.pod.spec!.containers[0]!, { podIp: "10.0.0.1", hostIp: "10.0.0.254" });
};

describe("config sources: env", () => {
  it("resolves configMapKeyRef and secretKeyRef, envFrom with prefix first, env winning, values never $(VAR)-expanded", async () => {
    const l = lookup({ app: data({ mode: "dark", LEVEL: "$(HOME)", "bad key": "x", "1st": "y" }) }, { creds: data({ password: "s3cret" }) });
    const p = pod([
      {
        envFrom: [
          { prefix: "APP_", configMapRef: { name: "app" } },
          { prefix: "", secretRef: { name: "creds" } },
        ],
        env: [
          { name: "HOME", value: "/root", valueFrom: undefined },
          { name: "MODE", value: "", valueFrom: { configMapKeyRef: { name: "app", key: "mode" } } },
          { name: "APP_mode", value: "override", valueFrom: undefined },
          { name: "PW", value: "", valueFrom: { secretKeyRef: { name: "creds", key: "password" } } },
          { name: "ECHO", value: "$(MODE)-$(APP_LEVEL)", valueFrom: undefined },
        ],
      },
    ]);
    const env = await envOf(p, l);
    assert.equal(env.get("MODE"), "dark");
    assert.equal(env.get("APP_mode"), "override");
    assert.equal(env.get("APP_LEVEL"), "$(HOME)"); // a value from an object is literal
    assert.equal(env.get("password"), "s3cret");
    assert.equal(env.get("PW"), "s3cret");
    assert.equal(env.get("ECHO"), "dark-$(HOME)");
    assert.equal(env.has("APP_bad key"), false);
    const r = await resolvePod(p, l, alloc);
    assert.deepEqual(r.warnings, [
      "Keys [APP_bad key] from the EnvFrom configMap ns/app were skipped since they are considered invalid environment variable names.",
    ]);
    // "APP_1st" is a valid name once prefixed; without the prefix "1st" would not be.
    assert.equal(env.get("APP_1st"), "y");
  });

  it("names what is missing as the kubelet does, and skips what is optional", async () => {
    const l = lookup({ app: data({ mode: "dark" }) });
    const ref = (name: string, key: string, optional?: boolean) => ({ name: "X", value: "", valueFrom: { configMapKeyRef: { name, key, optional } } });
    const failWith = async (p: Pod, message: string, where: object) => {
      await assert.rejects(resolvePod(p, l, alloc), (err: unknown) => {
        assert.ok(err instanceof ConfigError);
        assert.equal(err.message, message);
        assert.deepEqual(err.where, where);
        return true;
      });
    };
    await failWith(pod([{ env: [ref("nope", "k")] }]), 'configmap "nope" not found', { container: "app" });
    await failWith(pod([{ env: [ref("app", "k")] }]), "couldn't find key k in ConfigMap ns/app", { container: "app" });
    await failWith(pod([{ envFrom: [{ prefix: "", secretRef: { name: "s" } }] }]), 'secret "s" not found', { container: "app" });
    await failWith(pod([{ env: [{ name: "S", value: "", valueFrom: { secretKeyRef: { name: "s", key: "k" } } }] }]), 'secret "s" not found', {
      container: "app",
    });
    const env = await envOf(
      pod([{ env: [ref("nope", "k", true), ref("app", "k", true)], envFrom: [{ prefix: "", configMapRef: { name: "gone", optional: true } }] }]),
      l,
    );
    assert.equal(env.has("X"), false);
  });

  it("resourceFieldRef: limits and requests with divisors, rounded up; a missing limit is the node's allocatable", async () => {
    const p = pod([{ resources: { limits: { cpu: "500m", memory: "64Mi" }, requests: { cpu: "250m" }, claims: [] } }]);
    const sel = (resource: string, divisor = "") => ({ containerName: "", resource, divisor });
    assert.equal(resourceValue(p, sel("limits.cpu"), "app", alloc), "1");
    assert.equal(resourceValue(p, sel("limits.cpu", "1m"), "app", alloc), "500");
    assert.equal(resourceValue(p, sel("requests.cpu", "1m"), "app", alloc), "250");
    assert.equal(resourceValue(p, sel("limits.memory"), "app", alloc), String(64 * 1024 * 1024));
    assert.equal(resourceValue(p, sel("limits.memory", "1Mi"), "app", alloc), "64");
    assert.equal(resourceValue(p, sel("requests.memory", "1Mi"), "app", alloc), "64"); // the limit stands for an unset request
    const bare = pod([{}]);
    assert.equal(resourceValue(bare, sel("limits.cpu"), "app", alloc), "4");
    assert.equal(resourceValue(bare, sel("limits.memory", "1Gi"), "app", alloc), "16");
    assert.equal(resourceValue(bare, sel("requests.cpu"), "app", alloc), "0");
  });
});

describe("config sources: volume payloads", () => {
  const text = (f: { data: Uint8Array } | undefined) => (f ? td.decode(f.data) : undefined);

  it("every key at its own path with defaultMode (0644 when unset), binaryData too", async () => {
    const l = lookup({ cm: data({ a: "1", b: "2" }, { bin: new Uint8Array([0, 255]) }) });
    const out = await volumePayload(pod([]), { name: "v", configMap: { name: "cm", items: [] } } as unknown as Volume, l, alloc);
    assert.deepEqual([...out.keys()].sort(), ["a", "b", "bin"]);
    assert.equal(out.get("a")?.mode, DEFAULT_MODE);
    assert.deepEqual([...out.get("bin")!.data], [0, 255]);
    const moded = await volumePayload(pod([]), { name: "v", configMap: { name: "cm", items: [], defaultMode: 0o400 } } as unknown as Volume, l, alloc);
    assert.equal(moded.get("b")?.mode, 0o400);
  });

  it("items: only the keys named, at their paths, with their own modes; a missing key fails unless optional", async () => {
    const l = lookup({ cm: data({ a: "1", b: "2" }) });
    const v = (items: { key: string; path: string; mode?: number }[], optional?: boolean) =>
      ({ name: "v", configMap: { name: "cm", items, defaultMode: 0o640, optional } }) as unknown as Volume;
    const out = await volumePayload(
      pod([]),
      v([
        { key: "a", path: "conf/a.txt", mode: 0o600 },
        { key: "b", path: "b" },
      ]),
      l,
      alloc,
    );
    assert.deepEqual([...out.keys()], ["conf/a.txt", "b"]);
    assert.equal(out.get("conf/a.txt")?.mode, 0o600);
    assert.equal(out.get("b")?.mode, 0o640);
    await assert.rejects(volumePayload(pod([]), v([{ key: "zz", path: "z" }]), l, alloc), /configmap references non-existent config key: zz/);
    assert.equal((await volumePayload(pod([]), v([{ key: "zz", path: "z" }], true), l, alloc)).size, 0);
    await assert.rejects(volumePayload(pod([]), v([{ key: "a", path: "../escape" }]), l, alloc), /invalid path/);
    await assert.rejects(volumePayload(pod([]), { name: "v", secret: { secretName: "s", items: [] } } as unknown as Volume, l, alloc), /secret "s" not found/);
  });

  it("downwardAPI and projected: fields, sorted label lines, sources merged", async () => {
    const p = pod([{ resources: { limits: { memory: "32Mi" }, requests: {}, claims: [] } }], [], { tier: "web", app: "x" });
    assert.equal(downwardField(p, "metadata.labels"), 'app="x"\ntier="web"');
    assert.equal(downwardField(p, "metadata.labels['tier']"), "web");
    const l = lookup({ cm: data({ a: "1" }) }, { s: data({ token: "t" }) });
    const v = {
      name: "all",
      projected: {
        defaultMode: 0o444,
        sources: [
          { configMap: { name: "cm", items: [] } },
          { secret: { name: "s", items: [{ key: "token", path: "creds/token" }] } },
          {
            downwardApi: {
              items: [
                { path: "name", fieldRef: { apiVersion: "v1", fieldPath: "metadata.name" } },
                { path: "mem", resourceFieldRef: { containerName: "app", resource: "limits.memory", divisor: "1Mi" } },
              ],
            },
          },
        ],
      },
    } as unknown as Volume;
    const out = await volumePayload(p, v, l, alloc);
    assert.equal(text(out.get("a")), "1");
    assert.equal(text(out.get("creds/token")), "t");
    assert.equal(text(out.get("name")), "p");
    assert.equal(text(out.get("mem")), "32");
    assert.equal(out.get("name")?.mode, 0o444);
  });

  it("volumes fail before env, naming the volume", async () => {
    const p = pod(
      [{ env: [{ name: "X", value: "", valueFrom: { configMapKeyRef: { name: "nope", key: "k" } } }] }],
      [{ name: "cfg", configMap: { name: "absent", items: [] } }],
    );
    await assert.rejects(
      resolvePod(p, lookup({}), alloc),
      (err: unknown) => err instanceof ConfigError && "volume" in err.where && err.message === 'configmap "absent" not found',
    );
  });
});
