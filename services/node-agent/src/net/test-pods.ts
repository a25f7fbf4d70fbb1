// Test helpers: "pods" as named network namespaces running busybox httpd.
// Only tests import this (network, proxy and runtime tests), never the agent.
import { execFileSync, spawn, type ChildProcess } from "node:child_process";
import { mkdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
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

/** Pod CIDRs a test holds for itself: two adjacent /24s and the /23 spanning them. */
export interface TestCidrs {
  /** `10.250.<2k>.0/24` and `10.250.<2k+1>.0/24`. */
  cidrs: [string, string];
  /** The /23 holding both: a cluster range of the test's own. */
  span: string;
}

const CLAIMS = "/run/choreo-test-cidrs";

/**
 * Claims a pair of /24s in 10.250.0.0/16 (a range nothing but these tests
 * uses: clusters take 10.244.0.0/16) that no other test process on this
 * machine holds, so that two test files running at once never give two
 * bridges one subnet — the host would route one test's packets to the other's
 * bridge. A claim is a file holding the claimer's pid, taken over when
 * that process is gone; it is dropped when this process exits.
 */
export function claimTestCidrs(): TestCidrs {
  mkdirSync(CLAIMS, { recursive: true });
  const routes = execFileSync("ip", ["-4", "route", "show"], { encoding: "utf8" });
  const start = process.pid % 127;
  for (let i = 0; i < 127; i++) {
    const k = ((start + i) % 127) * 2;
    const file = join(CLAIMS, String(k));
    if (!tryClaim(file)) continue;
    if (routes.includes(`10.250.${k}.0/`) || routes.includes(`10.250.${k + 1}.0/`)) {
      rmSync(file, { force: true });
      continue;
    }
    process.once("exit", () => rmSync(file, { force: true }));
    return { cidrs: [`10.250.${k}.0/24`, `10.250.${k + 1}.0/24`], span: `10.250.${k}.0/23` };
  }
  throw new Error(`no free test pod CIDR pair in 10.250.0.0/16 (claims in ${CLAIMS})`);
}

function tryClaim(file: string): boolean {
  try {
    writeFileSync(file, String(process.pid), { flag: "wx" });
    return true;
  } catch {
    // Held; empty while its claimer is still writing its pid.
    const owner = Number(readFileSync(file, "utf8").trim() || process.pid);
    if (owner === process.pid || alive(owner)) return false;
    rmSync(file, { force: true });
    return tryClaim(file);
  }
}

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === "EPERM";
  }
}
