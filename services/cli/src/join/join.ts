// `choreo join`: a node agent on this machine, for a cluster whose api runs
// elsewhere, with a credential of its own got for a bootstrap token.
//
//   1. discovery: the api's certificate chain, fetched without trust; its root's SPKI hash must be --ca-hash
//   2. as the bootstrap token, over TLS to that root only: a CertificateSigningRequest for CN=system:node:<name>,
//      O=system:nodes (csr.ts), approved and signed by the api; then POST /choreo/v1/nodecredential {nodeName}
//      for the bus identity (token, NATS user)
//   3. written (0600) under --data-dir: kubeconfig (system:node:<name>, its client certificate), token, nats.credentials,
//      event-signing.pub (and nats-ca.crt)
//   4. the node agent started with them, supervised as `choreo up` supervises (restarted when it dies)
import { execFile } from "node:child_process";
import { lookup } from "node:dns/promises";
import { existsSync, mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { promisify } from "node:util";
import os from "node:os";
import path from "node:path";
import { freePort, NODE_FLAGS, startProcess } from "@choreo/kit/process";
import { createLogger } from "@choreo/kit/log";
import { writeCredentials, writeSecretFile } from "@choreo/kit/secrets";
import { CliError, RestClient, StatusError } from "../client.js";
import { renderKubeconfig } from "../kubeconfig.js";
import { ROOT } from "../up/node-setup.js";
import { Shutdown, supervise, type Supervised } from "../up/supervisor.js";
import { caCertHash, fetchServerRoot, isCaHash } from "./ca-hash.js";
import { nodeKeyAndRequest, requestNodeCertificate } from "./csr.js";
import { TOKEN_PATTERN } from "./tokens.js";

const execFileAsync = promisify(execFile);

export interface JoinOptions {
  server: string;
  token: string;
  caHash: string;
  nodeName: string;
  runtime: "auto" | "docker" | "process" | "hollow";
  dataDir: string;
  stateDir: string;
  imagesDir: string;
  /** Empty: the agent waits for the api to allocate one (node IPAM). */
  podCidr: string;
  /** The Node's InternalIP; empty: this machine's source address toward the NATS servers ({@link sourceAddressTo}). */
  nodeIp?: string;
  /** How the agent reaches other machines' pods (`--backend host-gw|vxlan|auto`); empty: the agent's default (auto). */
  backend?: string;
}

/** The credential the api hands a joining node. */
interface NodeCredential {
  nodeName: string;
  user: string;
  token: string;
  nats: { url: string; user: string; password: string; caPem?: string };
  eventVerifyKey: string;
}

/** A joined node: its agent, supervised. */
export interface JoinedNode {
  nodeName: string;
  kubeconfig: string;
  agent: Supervised;
  stop(): Promise<void>;
}

/** Steps 1-3: checks the api's CA, exchanges the token, writes the credential files; returns their paths. */
export async function fetchNodeCredential(o: Pick<JoinOptions, "server" | "token" | "caHash" | "nodeName" | "dataDir">) {
  if (!TOKEN_PATTERN.test(o.token)) throw new CliError(`error: --token must be a bootstrap token [a-z0-9]{6}.[a-z0-9]{16} (choreo token create)`);
  if (!isCaHash(o.caHash)) throw new CliError(`error: --ca-hash must be sha256:<64 hex digits> (choreo up prints it), got "${o.caHash}"`);
  let root: string;
  try {
    root = await fetchServerRoot(o.server);
  } catch (err) {
    throw new CliError(`error: cannot reach the api at ${o.server}: ${(err as Error).message}`);
  }
  const seen = caCertHash(root);
  if (seen !== o.caHash)
    throw new CliError(
      `error: the api at ${o.server} presents the CA ${seen}, not --ca-hash ${o.caHash}: refusing to send the token to it (a wrong server, or a wrong hash)`,
    );
  const client = new RestClient({
    server: o.server.replace(/\/$/, ""),
    ca: root,
    insecure: false,
    token: o.token,
    namespace: "default",
    namespaceExplicit: false,
  });
  let cred: NodeCredential;
  let tls: { key: string; certificate: string };
  try {
    // The https identity, the Kubernetes way: a CSR the api's csrapprover approves and its signer signs.
    const { key, request } = await nodeKeyAndRequest(o.nodeName);
    tls = { key, certificate: (await requestNodeCertificate(client, o.nodeName, request)).certificate };
    // The bus identity (node agents speak to the api over NATS, with a bearer token): the node credential exchange.
    cred = await client.json<NodeCredential>({ method: "POST", path: "/choreo/v1/nodecredential", body: { nodeName: o.nodeName } });
  } catch (err) {
    if (err instanceof StatusError && err.code === 401)
      throw new CliError(`error: the api refused the bootstrap token (unknown, wrong secret, or expired): ${err.message}`);
    throw err;
  }
  const dir = path.resolve(o.dataDir);
  mkdirSync(dir, { recursive: true, mode: 0o700 });
  const files = credentialFiles(dir, !!cred.nats.caPem, cred.nats.url);
  writeSecretFile(
    files.kubeconfig,
    renderKubeconfig({
      server: o.server,
      caPem: root,
      user: cred.user,
      auth: { "client-certificate-data": Buffer.from(tls.certificate).toString("base64"), "client-key-data": Buffer.from(tls.key).toString("base64") },
      context: `${cred.user}@choreo`,
      namespace: "default",
    }),
  );
  writeSecretFile(files.token, `${cred.token}\n`);
  writeCredentials(files.nats, { user: cred.nats.user, password: cred.nats.password });
  writeSecretFile(files.eventKey, cred.eventVerifyKey);
  if (files.natsCa && cred.nats.caPem) writeSecretFile(files.natsCa, cred.nats.caPem);
  // What a later `choreo join --data-dir DIR` (a restart, a reboot) resumes with, without a token.
  const saved: SavedCredential = { nodeName: cred.nodeName, server: o.server, natsUrl: cred.nats.url, natsCa: !!files.natsCa };
  writeFileSync(path.join(dir, SAVED), `${JSON.stringify(saved)}\n`, { mode: 0o600 });
  return files;
}

const SAVED = "node-credential.json";

/** What the data dir remembers of its exchange (the secrets are in the other files). */
interface SavedCredential {
  nodeName: string;
  server: string;
  natsUrl: string;
  natsCa: boolean;
}

/** The credential an earlier `choreo join` wrote under `dataDir`, or undefined when it holds none. */
export function savedCredential(dataDir: string): (ReturnType<typeof credentialFiles> & { nodeName: string; server: string }) | undefined {
  const dir = path.resolve(dataDir);
  const file = path.join(dir, SAVED);
  if (!existsSync(file)) return undefined;
  const saved = JSON.parse(readFileSync(file, "utf8")) as SavedCredential;
  const files = credentialFiles(dir, saved.natsCa, saved.natsUrl);
  for (const f of [files.kubeconfig, files.token, files.nats, files.eventKey]) if (!existsSync(f)) return undefined;
  return { ...files, nodeName: saved.nodeName, server: saved.server };
}

function credentialFiles(dir: string, natsCa: boolean, natsUrl: string) {
  return {
    kubeconfig: path.join(dir, "kubeconfig"),
    token: path.join(dir, "token"),
    nats: path.join(dir, "nats.credentials"),
    eventKey: path.join(dir, "event-signing.pub"),
    natsCa: natsCa ? path.join(dir, "nats-ca.crt") : undefined,
    natsUrl,
  };
}

/**
 * `choreo join`: the credential, then the node agent, supervised until
 * `stop`. Without a token, the credential an earlier join wrote under the
 * data dir is used again (its node name too), as a kubelet restarts with its
 * kubeconfig: a bootstrap token is needed once.
 */
export async function join(o: JoinOptions, log: (line: string) => void = console.log, signal?: AbortSignal): Promise<JoinedNode> {
  let files: ReturnType<typeof credentialFiles>;
  if (o.token) {
    files = await fetchNodeCredential(o);
    log(`node credential for system:node:${o.nodeName} written to ${files.kubeconfig}`);
  } else {
    const saved = savedCredential(o.dataDir);
    if (!saved) throw new CliError(`error: no node credential in ${path.resolve(o.dataDir)}: the first choreo join needs --server, --token and --ca-hash`);
    files = saved;
    o = { ...o, nodeName: saved.nodeName };
    log(`node ${saved.nodeName} rejoins ${saved.server} with the credential in ${files.kubeconfig}`);
  }
  // Other nodes route this node's pods via its InternalIP (host-gw): the address this machine reaches the cluster from.
  const nodeIp = o.nodeIp || (await sourceAddressTo(files.natsUrl));
  if (nodeIp) log(`node ${o.nodeName}'s InternalIP: ${nodeIp}`);
  const logs = path.join(path.resolve(o.dataDir), "logs");
  mkdirSync(logs, { recursive: true });
  const shutdown = new Shutdown();
  if (signal) signal.addEventListener("abort", () => shutdown.begin(), { once: true });
  const metricsPort = await freePort();
  const main = path.join(ROOT, "services/node-agent/src/main.ts");
  if (!existsSync(main)) throw new CliError(`error: no node agent in this checkout (${main})`);
  const agent = await supervise({
    name: o.nodeName,
    launch: () =>
      startProcess({
        name: o.nodeName,
        cmd: process.execPath,
        args: [
          ...NODE_FLAGS,
          "--import",
          "tsx",
          main,
          "--node-name",
          o.nodeName,
          "--runtime",
          o.runtime,
          "--state-dir",
          o.stateDir,
          "--images-dir",
          o.imagesDir,
          ...(o.podCidr ? ["--pod-cidr", o.podCidr] : []),
          ...(nodeIp ? ["--node-ip", nodeIp] : []),
          ...(o.backend ? ["--backend", o.backend] : []),
        ],
        cwd: ROOT,
        env: {
          CHOREO_NATS_URL: files.natsUrl,
          CHOREO_NATS_CREDENTIALS: files.nats,
          CHOREO_API_TOKEN_FILE: files.token,
          CHOREO_EVENT_VERIFY_KEY: files.eventKey,
          CHOREO_METRICS_PORT: String(metricsPort),
          CHOREO_STOP_PODS_ON_EXIT: "1",
          ...(files.natsCa ? { CHOREO_NATS_CA: files.natsCa } : {}),
        },
        readyUrl: `http://127.0.0.1:${metricsPort}/healthz`,
        timeoutMs: 60_000,
        logFile: path.join(logs, "node-agent.log"),
      }),
    shutdown,
    log: createLogger({ service: "choreo-join", destination: process.stderr }),
    logFile: path.join(logs, "node-agent.log"),
    pidDir: path.join(path.resolve(o.dataDir), "pids"),
  });
  return {
    nodeName: o.nodeName,
    kubeconfig: files.kubeconfig,
    agent,
    async stop() {
      shutdown.begin();
      await agent.stop(15_000);
    },
  };
}

/** The defaults of `choreo join`. */
export function joinDefaults(): Pick<JoinOptions, "nodeName" | "runtime" | "dataDir" | "stateDir" | "imagesDir"> {
  return {
    nodeName: os.hostname().toLowerCase(),
    runtime: "auto",
    dataDir: ".choreo-node",
    stateDir: "/var/lib/choreo/nodes",
    imagesDir: "/var/lib/choreo/images",
  };
}

/**
 * This machine's source address toward the first server of a NATS URL list
 * (`ip -j route get <server>`'s prefsrc): the address the other nodes reach it
 * at on a shared network. Empty when it cannot be told (the agent then
 * reports its bridge's address, which only nodes on this machine reach).
 */
export async function sourceAddressTo(natsUrl: string): Promise<string> {
  try {
    const host = new URL(natsUrl.split(",")[0]!.trim()).hostname.replace(/^\[|\]$/g, "");
    const { address } = await lookup(host, { family: 4 });
    if (address.startsWith("127.")) return "";
    const out = await execFileAsync("ip", ["-j", "-4", "route", "get", address], { encoding: "utf8" });
    const route = (JSON.parse(out.stdout) as { prefsrc?: string }[])[0];
    return route?.prefsrc && !route.prefsrc.startsWith("127.") ? route.prefsrc : "";
  } catch {
    return "";
  }
}
