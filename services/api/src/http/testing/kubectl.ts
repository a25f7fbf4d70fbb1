// Real kubectl against a test gateway: whether it is installed, a kubeconfig
// for the gateway, and a runner that answers with the exit code and output
// instead of throwing (the api's kubectl tests share these).
import { execFile } from "node:child_process";
import { writeFileSync } from "node:fs";
import path from "node:path";
import { promisify } from "node:util";

const exec = promisify(execFile);

/** Whether `bin` (kubectl on PATH by default) runs here. */
export async function kubectlInstalled(bin = "kubectl"): Promise<boolean> {
  return exec(bin, ["version", "--client"]).then(
    () => true,
    () => false,
  );
}

export interface KubectlResult {
  code: number;
  stdout: string;
  stderr: string;
}

/** Writes `<dir>/kubeconfig` for `server` (https with `caPem`, a bearer `token` if given) in namespace default; returns its path. */
export function writeKubeconfig(dir: string, o: { server: string; caPem?: string | Uint8Array; token?: string }): string {
  const file = path.join(dir, "kubeconfig");
  const ca = o.caPem ? `\n    certificate-authority-data: ${Buffer.from(o.caPem).toString("base64")}` : "";
  const user = o.token ? `\n  user:\n    token: ${o.token}` : "\n  user: {}";
  writeFileSync(
    file,
    `apiVersion: v1
kind: Config
clusters:
- name: choreo
  cluster:
    server: ${o.server}${ca}
users:
- name: admin${user}
contexts:
- name: choreo
  context: {cluster: choreo, user: admin, namespace: default}
current-context: choreo
`,
  );
  return file;
}

/** A runner of `kubectl --kubeconfig K --cache-dir <dir>/cache --request-timeout=Ns ARGS`: never throws, gives the exit code. */
export function kubectlRunner(
  dir: string,
  kubeconfig: string,
  o: { bin?: string; requestTimeoutSeconds?: number } = {},
): (...args: string[]) => Promise<KubectlResult> {
  const seconds = o.requestTimeoutSeconds ?? 8;
  return async (...args) => {
    try {
      const r = await exec(o.bin ?? "kubectl", ["--kubeconfig", kubeconfig, "--cache-dir", path.join(dir, "cache"), `--request-timeout=${seconds}s`, ...args], {
        timeout: (seconds + 1) * 1000,
      });
      return { code: 0, stdout: r.stdout, stderr: r.stderr };
    } catch (err) {
      const e = err as { code?: number; stdout?: string; stderr?: string };
      return { code: typeof e.code === "number" ? e.code : 1, stdout: e.stdout ?? "", stderr: e.stderr ?? String(err) };
    }
  };
}
