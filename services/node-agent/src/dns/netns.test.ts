// test-tier: servers
import assert from "node:assert/strict";
import { execFile } from "node:child_process";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, describe, it } from "node:test";
import { unwrap } from "@choreo/kit";
import { fromKubeJson } from "@choreo/kit/kube-json";
import type { Service } from "@choreo/kit/gen/choreo/core/v1/core";
import { silentLogger } from "@choreo/kit/log";
import { waitFor } from "@choreo/kit/testing";
import { startStack, type Stack } from "@choreo/api/testing";
import { ClusterDns } from "./cluster-dns.js";
import { resolvConf } from "./resolv-conf.js";

/** Runs a command; resolves with its output whatever its exit code. */
function run(cmd: string, args: string[]): Promise<{ code: number; out: string }> {
  return new Promise((resolve) => {
    execFile(cmd, args, { timeout: 20_000 }, (err, stdout, stderr) => {
      const code = err ? (typeof err.code === "number" ? err.code : 1) : 0;
      resolve({ code, out: `${stdout}${stderr}` });
    });
  });
}

async function must(cmd: string, ...args: string[]): Promise<void> {
  const r = await run(cmd, args);
  assert.equal(r.code, 0, `${cmd} ${args.join(" ")}: ${r.out}`);
}

const tools = ["ip", "busybox", "unshare", "getent"];
const skip = process.getuid?.() !== 0 ? "needs root (network namespaces)" : false;

/**
 * A pod's view: a network namespace joined to the host by a veth, the
 * responder on the host side's address, port 53, as on a node bridge.
 */
describe("ClusterDns from a network namespace", { skip }, () => {
  const id = `${process.pid % 100_000}`;
  const ns = `chdns-${id}`;
  const hostVeth = `chdns${id}h`;
  const subnet = `100.64.${process.pid % 250}`;
  const hostIp = `${subnet}.1`;
  const dir = mkdtempSync(join(tmpdir(), "choreo-dns-"));
  let s: Stack;
  let clusterIp: string;
  const ac = new AbortController();
  let done: Promise<void> = Promise.resolve();

  before(async () => {
    for (const t of tools) assert.equal((await run("sh", ["-c", `command -v ${t}`])).code, 0, `${t} installed`);
    await run("ip", ["netns", "del", ns]);
    await must("ip", "netns", "add", ns);
    await must("ip", "link", "add", hostVeth, "type", "veth", "peer", "name", `chdns${id}p`);
    await must("ip", "link", "set", `chdns${id}p`, "netns", ns);
    await must("ip", "addr", "add", `${hostIp}/30`, "dev", hostVeth);
    await must("ip", "link", "set", hostVeth, "up");
    await must("ip", "-n", ns, "addr", "add", `${subnet}.2/30`, "dev", `chdns${id}p`);
    await must("ip", "-n", ns, "link", "set", `chdns${id}p`, "up");
    await must("ip", "-n", ns, "link", "set", "lo", "up");
    s = await startStack();
    const web = unwrap(
      await s.client.create(
        fromKubeJson({
          apiVersion: "v1",
          kind: "Service",
          metadata: { name: "web", namespace: "default" },
          spec: { selector: { app: "web" }, ports: [{ port: 80 }] },
        }),
      ),
    ) as Service;
    clusterIp = web.spec?.clusterIp ?? "";
    const dns = new ClusterDns({
      client: s.client,
      nc: s.nc,
      jsm: s.jsm,
      log: silentLogger(),
      listen: { address: hostIp },
      upstream: [],
      clients: [`${subnet}.0/30`],
    });
    done = dns.start(ac.signal);
    await dns.listening;
    writeFileSync(join(dir, "resolv.conf"), resolvConf({ namespace: "default", nameserver: hostIp }));
  });
  after(async () => {
    ac.abort();
    await done;
    await s?.stop();
    await run("ip", ["netns", "del", ns]);
    await run("ip", ["link", "del", hostVeth]);
    rmSync(dir, { recursive: true, force: true });
  });

  /** Runs a shell command in the namespace with the pod's resolv.conf bind-mounted over /etc/resolv.conf. */
  const inPod = (script: string): Promise<{ code: number; out: string }> =>
    run("ip", ["netns", "exec", ns, "unshare", "-m", "sh", "-c", `mount --bind ${join(dir, "resolv.conf")} /etc/resolv.conf && ${script}`]);

  it("busybox nslookup resolves the full name through the responder", async () => {
    const r = await waitFor(
      async () => {
        const x = await run("ip", ["netns", "exec", ns, "busybox", "nslookup", "web.default.svc.cluster.local", hostIp]);
        return x.code === 0 ? x : undefined;
      },
      { timeoutMs: 10_000, message: "nslookup answered" },
    );
    assert.match(r.out, new RegExp(`Address: ${clusterIp.replaceAll(".", "\\.")}\\b`));
  });

  it("the short name resolves in its namespace through the resolv.conf resolvConf() writes", async () => {
    // busybox nslookup tries every search suffix and prints each answer; the others are NXDOMAIN.
    const r = await inPod("busybox nslookup web");
    assert.match(r.out, /Name:\s+web\.default\.svc\.cluster\.local/);
    assert.match(r.out, new RegExp(`Address: ${clusterIp.replaceAll(".", "\\.")}\\b`));
    // glibc's resolver (search list, ndots 5): dynamic getent and static busybox.
    assert.match((await inPod("getent hosts web")).out, new RegExp(`^${clusterIp.replaceAll(".", "\\.")}\\s+web\\.default\\.svc\\.cluster\\.local`));
    assert.match((await inPod("busybox ping -c 1 -W 1 web")).out, new RegExp(`PING web \\(${clusterIp.replaceAll(".", "\\.")}\\)`));
    assert.notEqual((await inPod("getent hosts nope")).code, 0);
  });
});
