import { describe, it, before, after } from "node:test";
import assert from "node:assert/strict";
import { mkdtempSync, mkdirSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import {
  connectionFrom,
  eventLogFrom,
  kubeconfigPaths,
  loadKubeconfig,
  mergeKubeconfigs,
  parseKubeconfig,
  renderKubeconfig,
  resolveConnection,
} from "./kubeconfig.js";

const CA = "-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n";

function config(opts: { server?: string; token?: string; namespace?: string; insecure?: boolean; name?: string } = {}): string {
  const name = opts.name ?? "choreo";
  return [
    "apiVersion: v1",
    "kind: Config",
    "clusters:",
    `- name: ${name}`,
    "  cluster:",
    `    server: ${opts.server ?? "https://127.0.0.1:6443"}`,
    opts.insecure ? "    insecure-skip-tls-verify: true" : `    certificate-authority-data: ${Buffer.from(CA).toString("base64")}`,
    "users:",
    `- name: ${name}-admin`,
    "  user:",
    `    token: ${opts.token ?? "secret"}`,
    "contexts:",
    `- name: ${name}`,
    "  context:",
    `    cluster: ${name}`,
    `    user: ${name}-admin`,
    ...(opts.namespace ? [`    namespace: ${opts.namespace}`] : []),
    `current-context: ${name}`,
    "",
  ].join("\n");
}

describe("parseKubeconfig and connectionFrom", () => {
  it("reads the current context's server, CA (base64 PEM), token and namespace", () => {
    const c = connectionFrom(parseKubeconfig(config({ namespace: "team-a" })));
    assert.equal(c.server, "https://127.0.0.1:6443");
    assert.equal(c.ca, CA);
    assert.equal(c.insecure, false);
    assert.equal(c.token, "secret");
    assert.equal(c.namespace, "team-a");
    assert.equal(c.namespaceExplicit, false);
  });

  it("defaults the namespace to default; -n wins and is explicit", () => {
    const cfg = parseKubeconfig(config());
    assert.equal(connectionFrom(cfg).namespace, "default");
    const c = connectionFrom(cfg, { namespace: "kube-system" });
    assert.equal(c.namespace, "kube-system");
    assert.equal(c.namespaceExplicit, true);
  });

  it("insecure-skip-tls-verify, and --server/--token overrides (a foreign server drops the CA)", () => {
    assert.equal(connectionFrom(parseKubeconfig(config({ insecure: true }))).insecure, true);
    const c = connectionFrom(parseKubeconfig(config()), { server: "http://localhost:8080/", token: "t2" });
    assert.equal(c.server, "http://localhost:8080");
    assert.equal(c.token, "t2");
    assert.equal(c.ca, undefined);
  });

  it("--context picks another context; an unknown one is an error", () => {
    const merged = mergeKubeconfigs([parseKubeconfig(config()), parseKubeconfig(config({ name: "other", server: "https://10.0.0.1:6443" }))]);
    assert.equal(merged.currentContext, "choreo");
    assert.equal(connectionFrom(merged, { context: "other" }).server, "https://10.0.0.1:6443");
    assert.throws(() => connectionFrom(merged, { context: "nope" }), /context was not found/);
  });

  it("no server anywhere is an error that says what to do", () => {
    assert.throws(() => connectionFrom(parseKubeconfig("")), /no server found/);
    assert.equal(connectionFrom(parseKubeconfig(""), { server: "http://x:1" }).namespace, "default");
  });

  it("bad YAML is an error", () => {
    assert.throws(() => parseKubeconfig("clusters: [unclosed"), /error loading config/);
  });
});

describe("the event log's cluster extension (choreo up's, for choreo events)", () => {
  it("is written beside the server and read back, a relative credentials path against the kubeconfig's directory", () => {
    const yaml = renderKubeconfig({
      server: "https://127.0.0.1:6443",
      caPem: CA,
      user: "choreo-admin",
      auth: { token: "t" },
      context: "choreo",
      namespace: "default",
      eventLog: { natsUrl: "nats://127.0.0.1:14222", credentials: "nats/subscriber.credentials" },
    });
    const c = parseKubeconfig(yaml, "/data");
    assert.deepEqual(eventLogFrom(c), { natsUrl: "nats://127.0.0.1:14222", credentials: "/data/nats/subscriber.credentials" });
    // The connection is the same as without it.
    assert.equal(connectionFrom(c).server, "https://127.0.0.1:6443");
  });

  it("is absent from other clusters and other contexts", () => {
    assert.equal(eventLogFrom(parseKubeconfig(config())), undefined);
    const both = mergeKubeconfigs([
      parseKubeconfig(config({ name: "other" })),
      parseKubeconfig(
        renderKubeconfig({
          server: "https://h:1",
          caPem: CA,
          user: "u",
          auth: {},
          context: "choreo",
          namespace: "default",
          eventLog: { natsUrl: "nats://h:2" },
        }),
      ),
    ]);
    assert.equal(eventLogFrom(both), undefined, "the current context (other) has none");
    assert.deepEqual(eventLogFrom(both, "choreo"), { natsUrl: "nats://h:2" });
  });
});

describe("kubeconfig resolution order", () => {
  let dir: string;
  let home: string;
  let work: string;
  before(() => {
    dir = mkdtempSync(path.join(tmpdir(), "choreo-kc-"));
    home = path.join(dir, "home");
    work = path.join(dir, "work");
    mkdirSync(path.join(home, ".kube"), { recursive: true });
    mkdirSync(path.join(work, ".choreo"), { recursive: true });
    writeFileSync(path.join(home, ".kube", "config"), config({ server: "https://home:1" }));
    writeFileSync(path.join(work, ".choreo", "kubeconfig"), config({ server: "https://local:1" }));
    writeFileSync(path.join(dir, "env.yaml"), config({ server: "https://env:1" }));
    writeFileSync(path.join(dir, "flag.yaml"), config({ server: "https://flag:1" }));
  });
  after(() => rmSync(dir, { recursive: true, force: true }));

  const server = (flag: string | undefined, env: Record<string, string | undefined>, cwd: string): string =>
    resolveConnection({ kubeconfig: flag }, env, cwd).server;

  it("--kubeconfig, then KUBECONFIG, then .choreo/kubeconfig, then ~/.kube/config", () => {
    const env = { HOME: home, KUBECONFIG: path.join(dir, "env.yaml") };
    assert.equal(server(path.join(dir, "flag.yaml"), env, work), "https://flag:1");
    assert.equal(server(undefined, env, work), "https://env:1");
    assert.equal(server(undefined, { HOME: home }, work), "https://local:1");
    assert.equal(server(undefined, { HOME: home }, dir), "https://home:1");
    assert.deepEqual(kubeconfigPaths(undefined, { HOME: path.join(dir, "nohome") }, dir), []);
  });

  it("KUBECONFIG lists are merged, first wins", () => {
    const list = [path.join(dir, "missing.yaml"), path.join(dir, "env.yaml"), path.join(dir, "flag.yaml")].join(path.delimiter);
    assert.equal(server(undefined, { KUBECONFIG: list }, dir), "https://env:1");
  });

  it("a missing --kubeconfig file is an error", () => {
    assert.throws(() => loadKubeconfig([path.join(dir, "nope.yaml")]), /no such file/);
  });
});
