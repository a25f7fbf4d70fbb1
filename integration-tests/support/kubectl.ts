import { execFile, spawn, type ChildProcess } from "node:child_process";
import { readFileSync, writeFileSync } from "node:fs";
import path from "node:path";
import type { TestCluster } from "./cluster.js";

/** Writes a kubeconfig for the cluster's https gateway (CA + token); returns its path. */
export function writeKubeconfig(c: TestCluster): string {
  const ca = Buffer.from(readFileSync(path.join(c.dir, "api", "pki", "apiserver.crt"))).toString("base64");
  const file = path.join(c.dir, "kubeconfig");
  writeFileSync(
    file,
    `apiVersion: v1
kind: Config
clusters:
- name: t
  cluster:
    server: ${c.httpsUrl}
    certificate-authority-data: ${ca}
users:
- name: u
  user:
    token: ${c.token}
contexts:
- name: t
  context: {cluster: t, user: u, namespace: default}
current-context: t
`,
  );
  return file;
}

/** Result of a command. */
export interface RunResult {
  code: number;
  stdout: string;
  stderr: string;
}

/** Runs a command with KUBECONFIG set and a separate discovery cache dir. */
export function run(
  cmd: string,
  args: string[],
  kubeconfig: string,
  opts: { input?: string; cwd?: string; env?: Record<string, string> } = {},
): Promise<RunResult> {
  return new Promise((resolve) => {
    const child = execFile(
      cmd,
      args,
      {
        env: { ...process.env, KUBECONFIG: kubeconfig, HOME: path.dirname(kubeconfig), ...opts.env },
        cwd: opts.cwd,
        timeout: 60_000,
        maxBuffer: 16 * 1024 * 1024,
      },
      (err, stdout, stderr) => {
        const code = err ? (typeof (err as { code?: unknown }).code === "number" ? (err as { code: number }).code : 1) : 0;
        resolve({ code, stdout: String(stdout), stderr: String(stderr) });
      },
    );
    if (opts.input !== undefined) {
      child.stdin?.end(opts.input);
    }
  });
}

/** Starts a long-running command (e.g. `get -w`) collecting its output. */
export function startWatch(cmd: string, args: string[], kubeconfig: string): { child: ChildProcess; output: () => string; stop: () => Promise<void> } {
  const child = spawn(cmd, args, { env: { ...process.env, KUBECONFIG: kubeconfig, HOME: path.dirname(kubeconfig) }, stdio: ["ignore", "pipe", "pipe"] });
  let out = "";
  child.stdout.on("data", (b: Buffer) => (out += b.toString()));
  child.stderr.on("data", (b: Buffer) => (out += b.toString()));
  return {
    child,
    output: () => out,
    stop: () =>
      new Promise((r) => {
        if (child.exitCode !== null) return r();
        child.once("exit", () => r());
        child.kill("SIGTERM");
      }),
  };
}
