// Test helpers: "pods" as named network namespaces running busybox httpd.
// Only the network and proxy tests import this.
import { spawn, type ChildProcess } from "node:child_process";
import { mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { run } from "../exec.js";
import { NAMES } from "./types.js";

/** A network namespace standing in for a pod, with an optional web server. */
export interface TestPod {
  uid: string;
  netns: string;
  netnsPath: string;
  /** Starts `busybox httpd` on `port` answering `body` at `/`. */
  serve(body: string, port: number): Promise<void>;
  /** Kills the server, deletes the namespace and the served directory. */
  remove(): Promise<void>;
}

/** Creates a named network namespace `choreo-<uid>`. */
export async function testPod(uid: string): Promise<TestPod> {
  const netns = NAMES.netns(uid);
  await run("ip", ["netns", "add", netns]);
  const servers: { child: ChildProcess; dir: string }[] = [];
  return {
    uid,
    netns,
    netnsPath: `/run/netns/${netns}`,
    async serve(body, port) {
      const dir = await mkdtemp(join(tmpdir(), "choreo-httpd-"));
      await writeFile(join(dir, "index.html"), body);
      const child = spawn("ip", ["netns", "exec", netns, "busybox", "httpd", "-f", "-p", String(port), "-h", dir], { stdio: "ignore" });
      servers.push({ child, dir });
    },
    async remove() {
      for (const s of servers) {
        if (s.child.exitCode === null && s.child.signalCode === null) {
          const exited = new Promise((r) => s.child.once("exit", r));
          s.child.kill("SIGKILL");
          await exited;
        }
        await rm(s.dir, { recursive: true, force: true });
      }
      await run("ip", ["netns", "del", netns]);
    },
  };
}

/**
 * `busybox wget` of `url`, from the host or inside `netns`; resolves with the
 * body. The static busybox here crashes on wget's own `-T`, hence `timeout`.
 */
export function wget(url: string, netns?: string): Promise<string> {
  const args = ["3", "busybox", "wget", "-q", "-O", "-", url];
  return netns ? run("ip", ["netns", "exec", netns, "timeout", ...args]) : run("timeout", args);
}

/** Every line of `ip -o link` and `iptables-save` mentioning one of `needles`. */
export async function leftovers(needles: readonly string[]): Promise<string[]> {
  const text = `${await run("ip", ["-o", "link"])}\n${await run("iptables-save", [])}\n${await run("ip", ["netns", "list"])}`;
  return text.split("\n").filter((l) => needles.some((n) => l.includes(n)));
}
