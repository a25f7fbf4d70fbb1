// test-tier: servers
// node-setup cleanup --node: what `choreo up` runs after its agents stopped,
// for whatever an agent left (killed while stopping its pods, or while
// making one). Needs root and mount(8): tmpfs and bind mounts are real.
import assert from "node:assert/strict";
import { execFileSync } from "node:child_process";
import { existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { after, describe, it } from "node:test";

const SETUP = fileURLToPath(new URL("./node-setup.ts", import.meta.url));

function mountedBelow(dir: string): string[] {
  return readFileSync("/proc/self/mounts", "utf8")
    .split("\n")
    .map((l) => l.split(" ")[1] ?? "")
    .filter((m) => m === dir || m.startsWith(`${dir}/`));
}

describe("node-setup cleanup", () => {
  const root = mkdtempSync(path.join(os.tmpdir(), "choreo-node-setup-"));
  after(() => {
    for (const m of mountedBelow(root).sort((a, b) => b.length - a.length)) execFileSync("umount", ["-l", m]);
    rmSync(root, { recursive: true, force: true });
  });

  it("removes the pod directories an agent left, unmounting their emptyDir tmpfs and hostPath binds first, and never touches what a bind showed", () => {
    const state = path.join(root, "state");
    const node = "cleanup-n1";
    const pods = path.join(state, node, "pods");
    // A pod killed mid-start: only its hosts file.
    mkdirSync(path.join(pods, "uid-a"), { recursive: true });
    writeFileSync(path.join(pods, "uid-a", "hosts"), "127.0.0.1 localhost\n");
    // A running pod's directory: a Memory emptyDir (tmpfs) and a hostPath bind of a host directory.
    const emptyDir = path.join(pods, "uid-b", "volumes", "cache");
    const bound = path.join(pods, "uid-b", "binds", "app", "0");
    mkdirSync(emptyDir, { recursive: true });
    mkdirSync(bound, { recursive: true });
    execFileSync("mount", ["-t", "tmpfs", "-o", "size=1m", "tmpfs", emptyDir]);
    writeFileSync(path.join(emptyDir, "f"), "scratch");
    const host = path.join(root, "host-data");
    mkdirSync(host);
    writeFileSync(path.join(host, "keep"), "the host's file");
    execFileSync("mount", ["--bind", host, bound]);
    // Another node's pods are not this node's to remove.
    const other = path.join(state, "cleanup-n2", "pods", "uid-c");
    mkdirSync(other, { recursive: true });

    execFileSync(process.execPath, ["--import", "tsx", SETUP, "cleanup", "--state-dir", state, "--node", node], { stdio: "pipe" });

    assert.deepEqual(readdirSync(pods), [], "no pod directory of the node left");
    assert.deepEqual(mountedBelow(path.join(state, node)), [], "nothing mounted below the node's state dir");
    assert.equal(readFileSync(path.join(host, "keep"), "utf8"), "the host's file", "the bound host directory is untouched");
    assert.ok(existsSync(other), "the other node's pod directory is kept");
  });
});
