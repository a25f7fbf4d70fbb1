// Node chores `choreo up` runs before and after its node agents:
//   prepare --runtime auto|docker|process --images-dir DIR
//       picks the runtime (auto: docker when an engine answers), builds the
//       local images it needs, prints the runtime on the last stdout line;
//   cleanup [--state-dir DIR] [--node N ...]
//       removes everything choreo made on this machine (or, with --node, of
//       those nodes only): labelled containers, processes in choreo network
//       namespaces, the namespaces, bridges, firewall chains, mounts and
//       cgroups under the state dir, and (with --node) the pod directories
//       the nodes' agents left.
import { existsSync, readdirSync, readFileSync, rmdirSync, rmSync } from "node:fs";
import path from "node:path";
import { parseArgs } from "node:util";
import Docker from "dockerode";
import { createLogger } from "@choreo/kit/log";
import { run } from "./exec.js";
import { ensureLocalImages } from "./images/local-images.js";
import { DEFAULT_IMAGES_DIR } from "./images/types.js";
import { cleanupAll, cleanupNode, removeNamespaces } from "./net/cleanup.js";
import { LABELS, NAMES } from "./net/types.js";
import { engineAnswers } from "./runtime/docker/engine.js";
import { ensureHelper } from "./runtime/process/helper.js";

const log = createLogger({ service: "node-setup" });

async function prepare(runtime: string, imagesDir: string): Promise<string> {
  const docker = runtime === "process" ? false : await engineAnswers(new Docker());
  if (runtime === "docker" && !docker)
    throw new Error("--runtime docker: no Docker engine answers on /var/run/docker.sock (start dockerd, or use --runtime process)");
  const chosen = docker ? "docker" : "process";
  await ensureLocalImages({ imagesDir, docker, log });
  if (chosen === "process") ensureHelper(); // choreo-exec, the process runtime's last step of every container
  return chosen;
}

/** Removes the containers labelled as choreo's (of `node`, or of every node). */
async function removeContainers(node?: string): Promise<number> {
  const docker = new Docker();
  if (!(await engineAnswers(docker))) return 0;
  const list = await docker.listContainers({ all: true, filters: { label: [node ? `${LABELS.node}=${node}` : LABELS.managed] } });
  await Promise.all(
    list.map((c) =>
      docker
        .getContainer(c.Id)
        .remove({ force: true, v: true })
        .catch(() => undefined),
    ),
  );
  return list.length;
}

/** The network namespaces of the pods a node's state dir knows (`<state>/<node>/pods/<uid>`). */
function podNamespaces(stateDir: string, node: string): Set<string> {
  const pods = path.join(stateDir, node, "pods");
  return new Set(existsSync(pods) ? readdirSync(pods).map((uid) => NAMES.netns(uid)) : []);
}

/** Unmounts whatever is mounted below `dir` (emptyDir tmpfs, overlays), deepest first. */
async function unmountBelow(dir: string): Promise<void> {
  const mounts = readFileSync("/proc/self/mounts", "utf8")
    .split("\n")
    .map((l) => l.split(" ")[1] ?? "")
    .filter((m) => m === dir || m.startsWith(`${dir}/`));
  for (const m of mounts.sort((a, b) => b.length - a.length)) await run("umount", ["-l", m]).catch(() => undefined);
}

/**
 * Removes the pod directories a node's agent left (`<state>/<node>/pods/<uid>`:
 * killed before it stopped its pods, or while it was making one). Called
 * after {@link unmountBelow}; a directory with something still mounted
 * below it is kept (`rm -r` would descend into a hostPath bind) and named.
 */
function removePodDirs(stateDir: string, node: string): { removed: number; kept: string[] } {
  const pods = path.join(path.resolve(stateDir), node, "pods");
  if (!existsSync(pods)) return { removed: 0, kept: [] };
  const mounted = readFileSync("/proc/self/mounts", "utf8")
    .split("\n")
    .map((l) => (l.split(" ")[1] ?? "").replace(/\\040/g, " "));
  const kept: string[] = [];
  let removed = 0;
  for (const uid of readdirSync(pods)) {
    const dir = path.join(pods, uid);
    if (mounted.some((m) => m === dir || m.startsWith(`${dir}/`))) kept.push(dir);
    else {
      rmSync(dir, { recursive: true, force: true });
      removed++;
    }
  }
  return { removed, kept };
}

/** Removes choreo's cgroups (leaf first); they are empty once the processes are gone. */
function removeCgroups(node?: string): void {
  const roots = ["/sys/fs/cgroup", ...(existsSync("/sys/fs/cgroup") ? readdirSync("/sys/fs/cgroup").map((c) => path.join("/sys/fs/cgroup", c)) : [])];
  const rm = (d: string): void => {
    for (const e of readdirSync(d, { withFileTypes: true })) if (e.isDirectory()) rm(path.join(d, e.name));
    try {
      rmdirSync(d);
    } catch {
      // still in use or not a cgroup dir
    }
  };
  for (const r of roots) {
    const d = node ? path.join(r, "choreo", node) : path.join(r, "choreo");
    if (existsSync(d)) rm(d);
  }
}

async function cleanup(stateDir: string | undefined, nodes: string[]): Promise<void> {
  if (nodes.length === 0) {
    const containers = await removeContainers();
    const processes = await removeNamespaces();
    if (stateDir) await unmountBelow(path.resolve(stateDir));
    await cleanupAll();
    removeCgroups();
    log.info({ containers, processes }, "node clean-up done");
    return;
  }
  for (const node of nodes) {
    const containers = await removeContainers(node);
    const processes = stateDir ? await removeNamespaces(podNamespaces(stateDir, node)) : 0;
    if (stateDir) await unmountBelow(path.resolve(stateDir, node));
    const dirs = stateDir ? removePodDirs(stateDir, node) : { removed: 0, kept: [] };
    if (dirs.kept.length > 0) log.warn({ node, dirs: dirs.kept }, "pod directories kept: something is still mounted below them");
    await cleanupNode(node);
    removeCgroups(node);
    log.info({ node, containers, processes, podDirs: dirs.removed }, "node clean-up done");
  }
}

const [command, ...rest] = process.argv.slice(2);
const { values } = parseArgs({
  args: rest,
  options: { runtime: { type: "string" }, "images-dir": { type: "string" }, "state-dir": { type: "string" }, node: { type: "string", multiple: true } },
});
try {
  if (command === "prepare") {
    console.log(await prepare(values.runtime ?? "auto", values["images-dir"] ?? DEFAULT_IMAGES_DIR));
  } else if (command === "cleanup") {
    await cleanup(values["state-dir"], values.node ?? []);
  } else {
    console.error("usage: node-setup prepare --runtime auto|docker|process [--images-dir DIR] | cleanup [--state-dir DIR] [--node N ...]");
    process.exitCode = 2;
  }
} catch (err) {
  console.error(`node-setup ${command}: ${(err as Error).message}`);
  process.exitCode = 1;
}
