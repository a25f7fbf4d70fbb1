// What `choreo up` adds for `choreo join`: it owns nats-server's users, so it
// answers the api's requests for a joining node's NATS user (kit/bus
// serveNatsUsers); and it makes a first bootstrap token (24 h, as
// `kubeadm init`) and prints the join command with the api's CA hash.
import { readFileSync } from "node:fs";
import path from "node:path";
import { connectBus, serveNatsUsers } from "@choreo/kit/bus";
import type { ServerHandle } from "@choreo/kit/process";
import { RestClient } from "../client.js";
import { caCertHash } from "./ca-hash.js";
import { createToken } from "./tokens.js";

/** Answers NATS user requests for joining nodes on `nats` (as its administrator) until `signal` aborts. */
export async function serveJoinUsers(nats: ServerHandle & { caFile?: string }, signal: AbortSignal): Promise<void> {
  const nc = await connectBus(nats.address, "choreo-up-nats-users", nats.credentialsFile, nats.caFile);
  serveNatsUsers(nc, nats, signal);
  signal.addEventListener("abort", () => void nc.close().catch(() => undefined), { once: true });
}

/** A fresh 24 h bootstrap token and the `choreo join` command another machine runs with it. */
export async function joinCommandLine(o: { server: string; adminToken: string; dataDir: string }): Promise<string> {
  const ca = readFileSync(path.join(o.dataDir, "pki", "apiserver.crt"), "utf8");
  const client = new RestClient({ server: o.server, ca, insecure: false, token: o.adminToken, namespace: "default", namespaceExplicit: false });
  const t = await createToken(client, { ttlMs: 24 * 3_600_000, description: "made by choreo up for choreo join" });
  return `choreo join --server ${o.server} --token ${t.token} --ca-hash ${caCertHash(ca)}`;
}
