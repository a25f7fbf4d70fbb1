// `choreo kubeconfig create NAME [--group G]…`: a kubeconfig for a user,
// authenticated by a client certificate the cluster's client CA signs
// (CN the user, O each group). Run where the api's data lives: the CA key
// is read from its pki directory. What the user may do is RBAC's business:
// bind a role to the name or a group.
import { readFileSync, writeFileSync } from "node:fs";
import path from "node:path";
import { signClientCert } from "@choreo/kit/secrets";
import { parse } from "yaml";
import { CliError } from "../client.js";
import { renderKubeconfig } from "../kubeconfig.js";
import { parseFlags, type CliIo, type Command } from "../session.js";

const OPTIONS = {
  help: { type: "boolean", short: "h" },
  group: { type: "string", multiple: true },
  "data-dir": { type: "string" },
  days: { type: "string" },
  namespace: { type: "string", short: "n" },
  output: { type: "string", short: "o" },
} as const;

const USAGE = `Create a kubeconfig for a user, signed by the cluster's client CA.

Usage: choreo kubeconfig create NAME [--group GROUP]... [--namespace NS] [--days N] [--data-dir DIR] [-o FILE]

The user is NAME (the certificate's CN), in each GROUP (its O). The server
and its CA come from DIR/kubeconfig, the CA key from DIR/pki (DIR: the
cluster's data dir, .choreo by default). The user may do nothing until a
RoleBinding or ClusterRoleBinding grants it, e.g.
  kubectl create rolebinding alice-edit --clusterrole=edit --user=alice -n dev
Written to FILE (mode 0600), else printed.`;

interface Kubeconfig {
  clusters?: { name?: string; cluster?: { server?: string; "certificate-authority-data"?: string } }[];
}

async function runKubeconfig(argv: string[], io: CliIo): Promise<number> {
  const { values, positionals } = parseFlags(argv, OPTIONS);
  if (values.help || positionals.length === 0) {
    io.stdout.write(`${USAGE}\n`);
    return values.help ? 0 : 1;
  }
  const [verb, name, ...rest] = positionals;
  if (verb !== "create") throw new CliError(`error: unknown command "${verb ?? ""}" for "choreo kubeconfig" (create)`);
  if (!name || rest.length) throw new CliError("error: exactly one NAME is required: choreo kubeconfig create NAME");
  const days = values.days === undefined ? 365 : Number(values.days);
  if (!Number.isInteger(days) || days < 1 || days > 3650) throw new CliError(`error: --days must be a whole number from 1 to 3650, not "${values.days ?? ""}"`);
  const dataDir = path.resolve(io.cwd, values["data-dir"] ?? ".choreo");
  let admin: Kubeconfig;
  try {
    admin = parse(readFileSync(path.join(dataDir, "kubeconfig"), "utf8")) as Kubeconfig;
  } catch (err) {
    throw new CliError(`error: cannot read ${path.join(dataDir, "kubeconfig")} (the cluster's data dir: --data-dir): ${(err as Error).message}`);
  }
  const cluster = admin.clusters?.[0]?.cluster;
  if (!cluster?.server || !cluster["certificate-authority-data"]) throw new CliError(`error: ${path.join(dataDir, "kubeconfig")} names no server and CA`);
  let signed: { cert: string; key: string };
  try {
    signed = await signClientCert(path.join(dataDir, "pki"), name, values.group ?? [], days);
  } catch (err) {
    throw new CliError(`error: ${(err as Error).message}`);
  }
  const b64 = (x: string): string => Buffer.from(x).toString("base64");
  const yaml = renderKubeconfig({
    server: cluster.server,
    caPem: Buffer.from(cluster["certificate-authority-data"], "base64").toString(),
    user: name,
    auth: { "client-certificate-data": b64(signed.cert), "client-key-data": b64(signed.key) },
    context: `${name}@choreo`,
    namespace: values.namespace ?? "default",
  });
  if (values.output) {
    writeFileSync(path.resolve(io.cwd, values.output), yaml, { mode: 0o600 });
    io.stderr.write(`kubeconfig for user "${name}"${values.group?.length ? ` (groups ${values.group.join(", ")})` : ""} written to ${values.output}\n`);
  } else {
    io.stdout.write(yaml);
  }
  return 0;
}

export const kubeconfigCommand: Command = { name: "kubeconfig", summary: "Create a kubeconfig for a user (client certificate)", run: runKubeconfig };
