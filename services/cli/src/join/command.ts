// `choreo join --server URL --token T --ca-hash sha256:…`: runs a node agent
// here until SIGINT/SIGTERM (see join.ts).
import { parseArgs } from "node:util";
import { onAbort, signalController } from "@choreo/kit/lifecycle";
import { join, joinDefaults, type JoinOptions } from "./join.js";

const USAGE = `Usage: choreo join [--server https://HOST:PORT --token TOKEN --ca-hash sha256:HEX]
                   [--node-name NAME] [--node-ip IP] [--runtime auto|docker|process|hollow] [--pod-cidr CIDR]
                   [--backend auto|host-gw|vxlan]
                   [--data-dir DIR] [--state-dir DIR] [--images-dir DIR]
Joins this machine to a cluster as a node: checks that the api's CA has the SubjectPublicKeyInfo
hash --ca-hash (choreo up prints the whole command), exchanges the bootstrap token (choreo token
create) for this node's own credential — its api token as system:node:NAME and its NATS user —
written (0600) under --data-dir (default .choreo-node), then runs the node agent with it,
restarted when it dies, until Ctrl-C or SIGTERM. NAME defaults to the host name; without
--pod-cidr the agent waits for the api to give the Node one. --node-ip (the Node's InternalIP, where
the other nodes route this one's pods) defaults to this machine's address toward the cluster's
NATS servers. --backend: how other machines' pods are reached — host-gw to a node on this one's
L2 segment and VXLAN to one behind a router (auto, the default), or one of them for every node.
Run again with only --data-dir (a restart, a reboot), it starts the agent with the credential it
keeps there: no token needed.`;

export async function joinCommand(argv: string[], out: (s: string) => void = console.log): Promise<number> {
  const { values } = parseArgs({
    args: argv,
    options: {
      server: { type: "string", short: "s" },
      token: { type: "string" },
      "ca-hash": { type: "string" },
      "node-name": { type: "string" },
      "node-ip": { type: "string" },
      runtime: { type: "string" },
      "pod-cidr": { type: "string" },
      backend: { type: "string" },
      "data-dir": { type: "string" },
      "state-dir": { type: "string" },
      "images-dir": { type: "string" },
      help: { type: "boolean", short: "h" },
    },
  });
  if (values.help) {
    out(USAGE);
    return 0;
  }
  // All three the first time; none to start again from the credential under --data-dir.
  const given = [values.server, values.token, values["ca-hash"]].filter((v) => v !== undefined).length;
  if (given !== 0 && given !== 3) throw new Error(`--server, --token and --ca-hash go together\n${USAGE}`);
  const d = joinDefaults();
  const runtime = values.runtime ?? d.runtime;
  if (!["auto", "docker", "process", "hollow"].includes(runtime)) throw new Error(`--runtime must be auto, docker, process or hollow, not ${runtime}`);
  const backend = values.backend ?? "";
  if (backend && !["auto", "host-gw", "vxlan"].includes(backend)) throw new Error(`--backend must be auto, host-gw or vxlan, not ${backend}`);
  const ac = signalController();
  const node = await join(
    {
      server: values.server ?? "",
      token: values.token ?? "",
      caHash: values["ca-hash"] ?? "",
      nodeName: values["node-name"] ?? d.nodeName,
      nodeIp: values["node-ip"] ?? "",
      runtime: runtime as JoinOptions["runtime"],
      podCidr: values["pod-cidr"] ?? "",
      backend,
      dataDir: values["data-dir"] ?? d.dataDir,
      stateDir: values["state-dir"] ?? d.stateDir,
      imagesDir: values["images-dir"] ?? d.imagesDir,
    },
    out,
    ac.signal,
  );
  out(`node ${node.nodeName} joined; its agent runs (pid ${node.agent.current().pid}). Ctrl-C stops it.`);
  await new Promise<void>((resolve) => onAbort(ac.signal, resolve));
  out("stopping…");
  await node.stop();
  out("stopped");
  return 0;
}
